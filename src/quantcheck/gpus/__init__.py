"""GPU classes as data: the names users type (`rtx4090`, `sm_89`, `8.9`, `mi300x`, `mps`) mapped
to vendor, compute capability or architecture and backend, and the `--gpu SPEC` grammar with
its software stack (`,torch=2.9,cuda=12.8`). Vocabulary: standard library only, no decisions
(each runtime's device gates are beside its record in `runtimes/`, decided in `rules/`)."""

from quantcheck.gpus.classes import CLASSES, GpuClass, card_names, class_of
from quantcheck.gpus.spec import GpuSpec, SpecError, expand_specs, parse_spec

__all__ = [
    "CLASSES",
    "GpuClass",
    "GpuSpec",
    "SpecError",
    "card_names",
    "class_of",
    "expand_specs",
    "parse_spec",
]
