"""What-if replay of a traced dispatch (docs/whatif.md): the traced waves
re-issued with their wait and barrier stalls re-derived, edits of the trace
that express a finding's change, and the predicted dispatch time."""

from attlens.analysis.replay.calibrate import Calibration, calibrate
from attlens.analysis.replay.edits import KINDS as EDIT_KINDS
from attlens.analysis.replay.edits import Edit, edits_from_options
from attlens.analysis.replay.findings import edits_for_rules, predicted_of
from attlens.analysis.replay.predict import WhatIf, whatif

__all__ = ["Calibration", "EDIT_KINDS", "Edit", "WhatIf", "calibrate", "edits_for_rules", "edits_from_options", "predicted_of", "whatif"]
