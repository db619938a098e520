"""Everything that runs rocprofv3: discovery, job files, capture, output discovery, PMC runs."""
