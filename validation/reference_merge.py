"""Shared steps of the scripts that merge a later device run into a reference file: both files
must come from the same device; the merged reference records when the added part was measured
and says so in its note."""
import json
import sys


def load_same_device(run_path, reference_path):
    """The run and the reference, or exit when they come from different devices."""
    with open(run_path) as f:
        run = json.load(f)
    with open(reference_path) as f:
        reference = json.load(f)
    if run["device"]["name"] != reference["device"]["name"]:
        sys.exit(f"error: {run_path} is from {run['device']['name']}, "
                 f"{reference_path} from {reference['device']['name']}")
    return run, reference


def write_merged(reference, reference_path, measured_at_key, measured_at, note):
    """Stamps the added part's time, appends `note` once, writes the reference back."""
    reference[measured_at_key] = measured_at
    if note not in reference.get("note", ""):
        reference["note"] = reference.get("note", "").rstrip(".") + note
    with open(reference_path, "w") as f:
        json.dump(reference, f, indent=1)
