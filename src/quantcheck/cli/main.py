"""Command line: `quantcheck inspect|check|rules|explain ...`. Imports stay lazy and stdlib-only."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from quantcheck.cli.options import HelpFormatter, Parser, add_output_format
from quantcheck.textsafe import say, say_block, say_error, say_warning

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any


def _add_inputs(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="safetensors files, folders, *.safetensors.index.json, or remote "
        "hf://ORG/REPO[/PATH][@REV] and https:// URLs",
    )


def _check_args(p: argparse.ArgumentParser) -> None:
    from quantcheck.cli.options import add_target
    from quantcheck.render import RENDERERS

    _add_inputs(p)
    add_target(p)
    add_output_format(p, tuple(RENDERERS))
    p.add_argument(
        "--select",
        action="append",
        default=[],
        metavar="CODE",
        help="only these codes (QC301, QC3, QC3*, or a rule name); repeatable, comma-separated",
    )
    p.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="CODE",
        help="leave out these codes; repeatable, comma-separated",
    )
    p.add_argument(
        "--statistics", action="store_true", help="print counts per code after the findings"
    )
    p.add_argument(
        "--show-all",
        action="store_true",
        help="text output: list every finding under its layer (by default a finding repeated "
        "over layers is one entry, and a consequence is named on its cause)",
    )
    p.add_argument(
        "--group",
        action="store_true",
        help="JSON output: also add `groups`, the entries the text report shows (every "
        "diagnostic is still listed)",
    )
    p.add_argument(
        "--fail-on",
        choices=("error", "warning", "info"),
        default="error",
        help="lowest severity that makes the exit code 1 (default: error)",
    )
    p.add_argument(
        "--deep",
        action="store_true",
        help="also read scale tensors and check their values (needs numpy)",
    )
    p.add_argument(
        "--read-weights",
        action="store_true",
        help="with --deep: read whole weights too (slow on large files)",
    )
    p.add_argument("--no-color", action="store_true", help="plain text output")
    from quantcheck.cli.check import add_many_arguments

    add_many_arguments(p)
    p.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="checkpoints checked at once: remote ones on threads, local ones (64 or more) "
        "on worker processes, one per CPU at most; 1 checks one at a time "
        "(default: min(8, 4 x CPUs))",
    )
    from quantcheck.cli.options import add_max_bytes

    add_max_bytes(p, "64M")
    from quantcheck.cli.options import add_gpu

    add_gpu(p)


def _inspect_args(p: argparse.ArgumentParser) -> None:
    _add_inputs(p)
    add_output_format(p, ("text", "json"))
    p.add_argument("--layers", metavar="GLOB", help="only layers whose prefix matches GLOB")
    p.add_argument("--summary", action="store_true", help="totals and metadata only")
    from quantcheck.cli.inspect import add_arguments

    add_arguments(p)


def _rules_args(p: argparse.ArgumentParser) -> None:
    add_output_format(p, ("text", "json", "markdown"))


def _explain_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("what", nargs="+", help="a code (QC301), a rule name, or an error message")
    add_output_format(p, ("text", "json"))


#: name -> (one-line help, description, argument builder)
CORE_COMMANDS = {
    "check": (
        "report every problem, per runtime (default: sglang and ComfyUI)",
        "Check every layer against each runtime's rules and report all problems in one "
        "pass. Reads only the header and the marker bytes unless --deep is given.",
        _check_args,
    ),
    "inspect": (
        "show layers, formats, shapes and sizes",
        "Show what a checkpoint holds: per layer the format, weight dtype and shape, "
        "logical [N, K], companion tensors, bytes and bits per weight; totals per "
        "format; file metadata.",
        _inspect_args,
    ),
    "rules": (
        "list every diagnostic code",
        "List every diagnostic code with its name, severity, per-runtime effect and "
        "whether a fix exists. --output-format markdown writes the full documentation "
        "(docs/rules.md).",
        _rules_args,
    ),
    "explain": (
        "explain a code, or a runtime's error message",
        "Print a rule's documentation (what it checks, why it matters, an example, "
        "the fix), or match a pasted sglang / ComfyUI error message to the rule, layer "
        "and fix.",
        _explain_args,
    ),
}


def build_parser(wanted: str | None = None) -> argparse.ArgumentParser:
    """The parser; only the command being run (`wanted`) gets its full argument set."""
    from quantcheck._version import __version__

    parser = Parser(
        prog="quantcheck",
        description="Validate, inspect and repair ComfyUI per-layer quantized safetensors "
        "checkpoints (comfy_quant markers) for ComfyUI and sglang — from the header "
        "alone, in milliseconds.",
        help_of="quantcheck",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"quantcheck {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    from quantcheck.cli.commands import EXTRA_COMMANDS

    known = wanted in CORE_COMMANDS or wanted in EXTRA_COMMANDS
    for name, (help_text, description, add_args) in CORE_COMMANDS.items():
        if known and name != wanted:
            continue  # running one command: the others need not exist (start-up time)
        if name != wanted:
            sub.add_parser(name, help=help_text, add_help=False)
            continue
        p = sub.add_parser(
            name,
            help=help_text,
            description=description,
            help_of=name,
            formatter_class=HelpFormatter,
        )
        add_args(p)

    from quantcheck.cli.commands import add_extra_commands

    add_extra_commands(sub, wanted, only=known)
    return parser


def _split(values: list[str]) -> list[str]:
    return [v for item in values for v in item.split(",") if v.strip()]


def cmd_check(args: argparse.Namespace) -> int:
    from quantcheck.cli.check import run

    return run(args)


def cmd_inspect(args: argparse.Namespace) -> int:
    from quantcheck.cli.inspect import run

    return run(args)


def cmd_rules(args: argparse.Namespace) -> int:
    from quantcheck.rules.registry import all_rules

    rules = all_rules()
    if args.output_format == "markdown":
        from quantcheck.rules.docs import rules_markdown

        say_block(rules_markdown(), end="")
        return 0
    if args.output_format == "json":
        from quantcheck.render.json_out import dumps

        say_block(
            dumps(
                "rules",
                {
                    "rules": [
                        {
                            "code": r.code,
                            "name": r.name,
                            "severity": r.severity.value,
                            "title": r.title,
                            "fix": r.fix.value if r.fix else None,
                            "effects": {t: e.value for t, e in r.runtime_effects().items()},
                        }
                        for r in rules.values()
                    ]
                },
            )
        )
        return 0
    for r in rules.values():
        eff = " ".join(f"{t}:{e.value}" for t, e in r.runtime_effects().items())
        fix = f"fix:{r.fix.value}" if r.fix else "no fix"
        say(f"{r.code}  {r.name:<34} {r.severity.value:<8} {fix:<18} {eff}")
        say(f"       {r.title}")
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from quantcheck.explain.lookup import explain

    text, ok = explain(" ".join(args.what), as_json=args.output_format == "json")
    say_block(text)
    return 0 if ok else 2


COMMANDS = {"check": cmd_check, "inspect": cmd_inspect, "rules": cmd_rules, "explain": cmd_explain}


#: Exit status when the reader of stdout goes away (`quantcheck inspect ... | head`): what a
#: shell reports for a program killed by SIGPIPE (128 + 13), as `cat` or `grep` would give.
#: Not 0: a `check` whose report was cut short must not pass for a clean one under pipefail.
EXIT_BROKEN_PIPE = 141


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; its exit code (0 clean, 1 problems, 2 could not run, 141 stdout
    closed early)."""
    try:
        try:
            code = _main(argv)
        except SystemExit:  # argparse: --help, --version, usage errors
            sys.stdout.flush()
            raise
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit flush
        return code
    except BrokenPipeError:
        return _stdout_closed()


def _stdout_closed() -> int:
    """The reader closed stdout: stop quietly. stdout is pointed at devnull so that the
    interpreter's final flush of what is still buffered cannot fail again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real file descriptor (stdout replaced in-process)
        pass
    return EXIT_BROKEN_PIPE


def _run_escaping_warnings(handler: Any, args: argparse.Namespace) -> int:
    """`handler(args)` with Python warnings (a library's, ours: they may name a layer)
    printed the way every other line is, through `textsafe.say_warning`, not raw; the
    warnings machinery is as it was afterwards."""
    import warnings

    def show(message: object, category: type, *_args: object, **_kw: object) -> None:
        say_warning(f"{category.__name__}: {message}")

    with warnings.catch_warnings():
        warnings.showwarning = show
        return int(handler(args))


def _main(argv: Sequence[str] | None) -> int:
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:  # names may hold lone surrogates: never crash printing them
            reconfigure(errors="backslashreplace")
    argv = list(sys.argv[1:] if argv is None else argv)
    cache = sys.modules.get("quantcheck.io.hubcache")  # loaded by an earlier in-process run
    if cache is not None:
        cache.forget_said()
    wanted = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(wanted)
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 2
    handler = COMMANDS.get(args.command) or getattr(args, "handler", None)
    assert handler is not None  # every subparser is a core command or sets `handler`
    from quantcheck.model.checkpoint import InputError

    try:
        return _run_escaping_warnings(handler, args)
    except BrokenPipeError:
        raise  # an OSError, but not an error of the run: main() ends quietly
    except InputError as exc:
        say_error(exc)
        return 2
    except OSError as exc:
        from quantcheck.errors import describe_os_error

        say_error(describe_os_error(exc))
        return 2
    except KeyboardInterrupt:
        say("quantcheck: interrupted", err=True)
        return 130
    except ModuleNotFoundError as exc:
        if not exc.name or exc.name.partition(".")[0] == "quantcheck":
            raise  # our own module missing is a defect, not the environment's
        say_error(missing_package(args.command, exc.name))
        return 2


#: packages a command may find missing, and how to get them
_DEPENDENCY = "a dependency of quantcheck: `pip install quantcheck` installs it"
_INSTALL_HINTS = {"numpy": _DEPENDENCY, "ml_dtypes": _DEPENDENCY}


def missing_package(command: str, name: str) -> str:
    """One line: which package `command` needs and how to install it."""
    top = name.partition(".")[0]
    hint = _INSTALL_HINTS.get(top, f"pip install {top}")
    return f"`quantcheck {command}` needs the Python package {top!r}, not installed here ({hint})"
