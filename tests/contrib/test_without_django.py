"""The package needs Django only for taskforge.contrib.django (this interpreter, the project's
.venv, has no Django 6: Django 6 needs Python >= 3.12)."""

from __future__ import annotations

import subprocess
import sys

from itest_support import ROOT


def test_only_contrib_django_imports_django():
    code = (
        "import sys\n"
        "import taskforge, taskforge.client, taskforge.worker, taskforge.cli, taskforge.scheduler, taskforge.contrib\n"
        "assert 'django' not in sys.modules, 'something imported django'\n"
        "try:\n"
        "    import taskforge.contrib.django\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
        "else:\n"
        "    print('imported with Django', __import__('django').get_version())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    if sys.version_info < (3, 12):
        assert "taskforge.contrib.django needs Django >= 6.0" in done.stdout
        assert "pip install 'taskforge[django]'" in done.stdout
