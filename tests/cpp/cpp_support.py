"""Shared by the C++ kernel tests: the compiler gate and a per-session build cache."""
from __future__ import annotations

import os
import shutil

import pytest

HAVE_CXX = bool(os.environ.get("CXX") and shutil.which(os.environ["CXX"])) or bool(
    shutil.which("g++") or shutil.which("clang++"))
needs_cxx = pytest.mark.skipif(not HAVE_CXX, reason="no C++ compiler (g++ / clang++ / $CXX)")


#: the headers' opt-out of <algorithm>, for kernels that include what they use (as the tests' do)
LEAN = "-DPTOPIPE_NO_STD_ALGORITHM"
#: the tests' kernels are tiny and include what they use: built unoptimised, and linked by gold
#: where it is installed (a sixth of each build's CPU time is the default linker's)
QUICK = " ".join(["-O0", LEAN] + (["-fuse-ld=gold"] if shutil.which("ld.gold") else []))


@pytest.fixture(scope="session", autouse=False)
def cpp_cache(tmp_path_factory):
    """One build cache for the session (each kernel file is compiled once), unless the
    environment names one already."""
    old = os.environ.get("PTOPIPE_CACHE_DIR")
    old_flags = os.environ.get("CXXFLAGS")
    if old is None:
        os.environ["PTOPIPE_CACHE_DIR"] = str(tmp_path_factory.mktemp("cpp_cache"))
    if old_flags is None:
        os.environ["CXXFLAGS"] = QUICK
    yield os.environ["PTOPIPE_CACHE_DIR"]
    if old is None:
        os.environ.pop("PTOPIPE_CACHE_DIR", None)
    if old_flags is None:
        os.environ.pop("CXXFLAGS", None)
