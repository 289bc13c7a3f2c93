"""Pictures of ideas drawn from a kernel's own parameters (moved here whole; split by subject next)."""
from .tensor_cores import *  # noqa: F403
