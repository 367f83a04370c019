"""passes: the compiler passes over the op/region IR (one module per pass, each with
``NAME``, the typed property sets ``REQUIRED`` / ``PRODUCED`` / ``INVALIDATED`` of
:class:`~.properties.IRProperty` and ``run(program, ctx) -> program``), the properties and
their verifiers (:mod:`.properties`), the PassManager that runs them (:mod:`.manager`) and
the remarks passes make about what they did and did not do (:mod:`.remarks`);
docs/passes/README.md lists the pipeline."""
from . import (allocate_flags, allocate_memory, expand_mixed, insert_tfree, lower_platform, pipeline_loops,
               resolve_peers, skew_push_ahead, validate, verify_pipes)
from .properties import IRProperty
from .remarks import Remark, RemarkKind, Remarks
from .manager import (CANONICAL_ORDER, FRONT_END, REGISTRY, PassContext, PassInfo, PassManager,
                      compile_program, default_pipeline, parse_pipeline, register, unverified_pipeline)

for _p in (expand_mixed, insert_tfree, skew_push_ahead, pipeline_loops, verify_pipes, allocate_memory, resolve_peers,
           allocate_flags, lower_platform, validate):
    register(_p)

__all__ = ["CANONICAL_ORDER", "FRONT_END", "IRProperty", "PassContext", "PassInfo", "PassManager", "REGISTRY",
           "Remark", "RemarkKind", "Remarks", "compile_program", "default_pipeline", "parse_pipeline",
           "register", "unverified_pipeline", "verify_pipes"]
