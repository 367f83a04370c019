"""mutate: how much of a kernel's protocol its checks cover.  Protocol mutations of the
kernel's source (:mod:`.operators`), each mutant run through the user's own checks
(:mod:`.checks`); the survivors are the protocol mistakes those checks would not notice
(``ptopipe mutate``, docs/mutate.md)."""
from .checks import CAUGHT, INVALID, NOT_CHECKED, SURVIVED, Coverage, Job, Verdict, check_mutant, coverage
from .operators import HOOK, Mutant, MutantHooks, Mutation, mutants

__all__ = ["CAUGHT", "HOOK", "INVALID", "NOT_CHECKED", "SURVIVED", "Coverage", "Job", "Mutant", "MutantHooks", "Mutation",
           "Verdict", "check_mutant", "coverage", "mutants"]
