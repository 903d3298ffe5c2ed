import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def mixed_hexapod(tmp_path_factory):
    """The mixed six-leg platform of tests/platforms.py, generated once per test run
    (tests/shared.py)."""
    from tests import platforms, shared
    root = tmp_path_factory.mktemp("mixed")
    pf, num = platforms.mixed(root, lambda pf: shared.once(
        tmp_path_factory, "files_mixed_hexapod", lambda: platforms.platform_files(pf)))
    return pf, num, root
