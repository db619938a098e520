"""Synthetic ATT captures: a documented toy model of a kernel, written in the
exact on-disk format rocprofv3 produces (docs/demo.md)."""

from attlens.synth.toy import Op, ToyKernel, default_kernel, write_capture

__all__ = ["Op", "ToyKernel", "default_kernel", "write_capture"]
