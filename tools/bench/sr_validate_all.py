"""Validate every skill folder under ROOT with the reference library, in one process.

The reference CLI (`agentskills validate`) takes one folder per process, so this calls
`skills_ref.validate` over all sub-folders instead (sorted, like `skillbase validate ROOT`).
Usage: sr_validate_all.py ROOT   (exit 1 if any skill is invalid)
"""
import sys
from pathlib import Path

import skills_ref

root = Path(sys.argv[1])
valid = invalid = 0
for d in sorted(p for p in root.iterdir() if p.is_dir()):
    if skills_ref.validate(d):
        invalid += 1
    else:
        valid += 1
print(f"valid={valid} invalid={invalid}")
sys.exit(1 if invalid else 0)
