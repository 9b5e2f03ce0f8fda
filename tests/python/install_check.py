"""Python.Install: after `cmake --install BUILD --prefix PREFIX`, the package imported from
PREFIX/lib/python3/dist-packages reads the installed data (PREFIX/share/inferlab), not the source
tree's. Run as: python3 install_check.py PREFIX (from a folder outside the source tree)."""

import os
import shutil
import sys

prefix = os.path.realpath(sys.argv[1])
import inferlab  # noqa: E402  (PYTHONPATH names the installed package)

assert os.path.realpath(inferlab.__file__).startswith(prefix), inferlab.__file__
shared = os.path.join(prefix, "share", "inferlab")
assert os.path.realpath(os.environ["INFERLAB_DATA_DIR"]) == shared, os.environ["INFERLAB_DATA_DIR"]
# A model that exists only in the installed copy: found only if that copy is the one read.
shutil.copy(os.path.join(shared, "models", "llama-3.2-1b.json"),
            os.path.join(shared, "models", "installed-only.json"))
result = inferlab.predict(model="installed-only", hardware="h100-sxm", batch=1, input=512,
                          output=128)
assert result["ttft_ms"] > 0, result
print(f"inferlab {inferlab.__version__} from {os.path.dirname(inferlab.__file__)}: "
      f"ttft {result['ttft_ms']:.2f} ms")
