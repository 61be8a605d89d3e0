"""`tessera tune` (also `python -m tessera.tune`): autotune ahead of time, and
move tuning results between machines and repositories as one JSON database.

    tessera tune FILE --kernel NAME --arg x_ptr=fp32[4096,1024] --arg n_cols=1024 ... --grid "(4096,)"
                 [--config "BLOCK_SIZE=1024,num_warps=8"]... [--key n_cols,...]
    tessera tune export DB.json [--kernel NAME]     # every stored result (of one kernel) into DB.json
    tessera tune import DB.json [--replace]         # DB.json's results into the cache directory
    tessera tune list                               # the stored results

Tuning runs the kernel, so it needs a CUDA GPU (and torch, for tensor
arguments); export, import and list work anywhere. Results land where the
autotuner looks for them (tessera/autotune.py), so later processes on the
same GPU, tessera version and kernel source benchmark nothing.

Argument specs: DTYPE[SHAPE] is a random CUDA tensor (fp16, bf16, fp32, fp64,
int8, int16, int32, int64, uint8, bool), a Python literal is itself, and
anything else is a Python expression (torch and tessera in scope).
The grid is a Python expression over the arguments (cdiv in scope), or a
lambda taking the meta-parameters.
"""
import argparse
import ast
import datetime
import importlib
import importlib.util
import json
import os
import re
import sys

# The module (tessera.autotune is the decorator once the package is imported).
at = importlib.import_module(".autotune", __package__)

DB_FORMAT = "tessera-tuning-db-1"
_DTYPES = {"fp16": "float16", "float16": "float16", "bf16": "bfloat16", "bfloat16": "bfloat16",
           "fp32": "float32", "float32": "float32", "fp64": "float64", "float64": "float64",
           "int8": "int8", "int16": "int16", "int32": "int32", "i32": "int32", "int64": "int64",
           "i64": "int64", "uint8": "uint8", "bool": "bool"}


class UsageError(Exception):
    pass


# -------------------------------------------------------------- the results

def stored_results():
    """[(path, result)] of every readable tuning result in the cache directory."""
    d = at.tuning_dir()
    if d is None or not os.path.isdir(d):
        return []
    out = []
    for name in sorted(os.listdir(d)):
        if name.endswith(".json") and not name.startswith("."):
            data = at.read_result(os.path.join(d, name))
            if data:
                out.append((os.path.join(d, name), data))
    return out


def export_db(path, kernel=None):
    entries = [data for _, data in stored_results() if kernel is None or data.get("kernel") == kernel]
    db = {"format": DB_FORMAT, "exported": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
          "entries": sorted(entries, key=lambda d: (d["kernel"], json.dumps(d["key"]), d["device"]))}
    try:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(db, f, indent=1, sort_keys=True)
            f.write("\n")
    except OSError as e:
        raise UsageError(f"cannot write '{path}': {e.strerror}") from None
    return len(entries)


def _read_db(path):
    """The database in `path` as a dict, else a UsageError naming the file and what is wrong."""
    try:
        with open(path, encoding="utf-8") as f:
            db = json.load(f)
    except IsADirectoryError:
        raise UsageError(f"'{path}' is a directory, not a tuning database (a .json file)") from None
    except OSError as e:
        raise UsageError(f"cannot read '{path}': {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise UsageError(f"{path}: not JSON: byte {e.start} is not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise UsageError(f"{path}:{e.lineno}:{e.colno}: not JSON: {e.msg}") from None
    if not isinstance(db, dict) or db.get("format") != DB_FORMAT or not isinstance(db.get("entries"), list):
        raise UsageError(f"{path} is not a tessera tuning database (format {DB_FORMAT})")
    return db


def _check_entry(path, i, entry):
    if not isinstance(entry, dict):
        raise UsageError(f"{path}: entry {i} is not an object (a JSON {{...}}), got {type(entry).__name__}")
    missing = [k for k in ("kernel", "source_sha256", "key", "device", "tessera", "timings") if k not in entry]
    if missing or entry.get("format") != at.FORMAT:
        raise UsageError(f"{path}: entry {i} lacks {', '.join(missing) or 'the format ' + at.FORMAT}")
    if not isinstance(entry["timings"], list) or not all(isinstance(t, dict) and "config" in t
                                                        for t in entry["timings"]):
        raise UsageError(f"{path}: entry {i}'s timings must be a list of {{\"config\": ..., ...}} objects")


def import_db(path, replace=False):
    """Writes each entry of the database into the cache directory; merges with what is there
    (the imported timings win) unless `replace`. Returns the number of entries written."""
    db = _read_db(path)
    d = at.tuning_dir()
    if d is None:
        raise UsageError("the cache is off (TESSERA_CACHE=off): there is nowhere to import to")
    for i, entry in enumerate(db["entries"]):
        _check_entry(path, i, entry)
    written = 0
    for entry in db["entries"]:
        target = os.path.join(d, at.identity_digest(entry) + ".json")
        merged = dict(entry)
        old = None if replace else at.read_result(target)
        if old:
            timings = {json.dumps(t["config"], sort_keys=True): t for t in old["timings"]}
            timings.update({json.dumps(t["config"], sort_keys=True): t for t in entry["timings"]})
            merged["timings"] = [timings[k] for k in sorted(timings)]
        if at.write_result(target, merged):
            written += 1
    return written


# ------------------------------------------------------------------- tuning

def _parse_value(spec, names):
    m = re.fullmatch(r"\s*([A-Za-z0-9_]+)\s*\[([0-9,\s]*)\]\s*", spec)
    if m and m.group(1) in _DTYPES:
        import torch
        dtype = getattr(torch, _DTYPES[m.group(1)])
        shape = tuple(int(s) for s in m.group(2).replace(" ", "").split(",") if s)
        if dtype.is_floating_point:
            return torch.randn(shape, dtype=dtype, device="cuda")
        if dtype == torch.bool:
            return torch.randint(0, 2, shape, device="cuda").bool()
        return torch.randint(0, 100, shape, dtype=dtype, device="cuda")
    try:
        return ast.literal_eval(spec)
    except (ValueError, SyntaxError):
        return eval(spec, names)  # noqa: S307 (the user's own command line)


def _load_kernel(path, name):
    path = os.path.abspath(path)
    for p in (os.getcwd(), os.path.dirname(path)):
        if p not in sys.path:
            sys.path.insert(0, p)
    spec = importlib.util.spec_from_file_location("_tessera_tune_target", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not hasattr(module, name):
        raise UsageError(f"{path} defines no '{name}'")
    return getattr(module, name)


def _parse_config(text):
    kwargs, options = {}, {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        if "=" not in part:
            raise UsageError(f"--config '{text}': expected NAME=VALUE,...")
        k, v = (s.strip() for s in part.split("=", 1))
        try:
            value = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            raise UsageError(f"--config '{text}': the value of {k} must be a Python literal, got '{v}'") from None
        (options if k in ("num_warps", "num_stages") else kwargs)[k] = value
    # The rules of tessera.compile and `tessera compile` (compiler/driver/Compiler.h).
    warps, stages = options.get("num_warps", 4), options.get("num_stages", 3)
    if not (type(warps) is int and 1 <= warps <= 32 and warps & (warps - 1) == 0):
        raise UsageError(f"--config '{text}': num_warps must be a power of 2 between 1 and 32, got {warps!r}")
    if not (type(stages) is int and 1 <= stages < 2 ** 31):
        raise UsageError(f"--config '{text}': num_stages must be a positive integer, got {stages!r}")
    return at.Config(kwargs, **options)


def _check_command_line(options):
    """What can be checked without a GPU, so that a typo is reported before "needs a GPU"."""
    if os.path.isdir(options.file):
        raise UsageError(f"'{options.file}' is a directory, not a kernel file")
    if not os.path.isfile(options.file):
        raise UsageError(f"cannot read '{options.file}': No such file or directory")
    for text in options.config:
        _parse_config(text)
    try:
        compile(options.grid, "--grid", "eval")
    except SyntaxError as e:
        raise UsageError(f"--grid '{options.grid}' is not a Python expression ({e.msg})") from None


def tune(options):
    import tessera
    _check_command_line(options)
    if not (tessera.driver_available() and tessera.device_count() > 0):
        why = tessera._C.driver_status()["error"] if tessera._C is not None else "tessera's extension is not built"
        print("tessera tune: tuning runs the kernel and needs a CUDA GPU, and this machine has none "
              f"({why}). `tessera tune export` and `tessera tune import` work without one.", file=sys.stderr)
        return 2
    kernel = _load_kernel(options.file, options.kernel)
    import torch  # noqa: F401 (tensor arguments)
    names = {"torch": sys.modules["torch"], "tessera": tessera, "cdiv": tessera.cdiv,
             "next_power_of_2": tessera.next_power_of_2}
    args = {}
    for item in options.arg:
        if "=" not in item:
            raise UsageError(f"--arg '{item}': expected NAME=SPEC")
        k, v = item.split("=", 1)
        args[k.strip()] = _parse_value(v, {**names, **args})
    grid = eval(options.grid, {**names, **args})  # noqa: S307
    if isinstance(kernel, at.Autotuner):
        tuner = kernel
        if options.config:
            tuner.configs = [_parse_config(c) for c in options.config]
    else:
        if not options.config:
            raise UsageError(f"'{options.kernel}' is not decorated with @tessera.autotune: give --config ...")
        keys = options.key.split(",") if options.key else [k for k, v in args.items() if isinstance(v, int)]
        tuner = at.Autotuner(kernel, [_parse_config(c) for c in options.config], keys)
    order = tuner.arg_names
    unknown = [k for k in args if k not in order]
    if unknown:
        raise UsageError(f"'{options.kernel}' has no parameter {', '.join(unknown)} (its parameters: {', '.join(order)})")
    positional = [args[n] for n in order if n in args]
    best = tuner.tune(*positional, grid=grid)
    print(f"{options.kernel}: key {tuner.tuning_key(tuner._named(positional, {}))} on {at._device_name()}")
    for config, ms in tuner.configs_timings.items():
        mark = "*" if config == best else " "
        shown = f"{ms:10.4f} ms" if ms is not None else "    failed   " + tuner.failures.get(config, "")
        print(f" {mark} {shown}  {config}")
    print(f"best: {best}   (stored in {at.tuning_dir()})")
    return 0


# ---------------------------------------------------------------- the CLI

_COMMANDS = """commands (each answers --help):
  tessera tune FILE --kernel NAME --grid GRID [options]   tune a kernel (needs a CUDA GPU)
  tessera tune export DB.json [--kernel NAME]             every stored result (of one kernel) into DB.json
  tessera tune import DB.json [--replace]                 DB.json's results into the cache directory
  tessera tune list                                       the stored results"""


class _Parser(argparse.ArgumentParser):
    """argparse with the C++ commands' rules (compiler/cli/CommandLine.h): an unknown option or a
    missing value is one line naming it, with a hint to --help, and exit status 2; no abbreviations."""

    def __init__(self, prog, **kwargs):
        super().__init__(prog=prog, allow_abbrev=False, formatter_class=argparse.RawDescriptionHelpFormatter,
                         **kwargs)

    def parse_args(self, args):
        i = 0
        while i < len(args) and args[i] != "--":  # unknown options first (argparse reports a missing operand)
            name = args[i].split("=", 1)[0]
            action = self._option_string_actions.get(name)
            if args[i].startswith("-") and len(args[i]) > 1 and action is None:
                self.error(f"unknown option '{name}' for '{self.prog}'")
            i += 2 if action is not None and action.nargs != 0 and "=" not in args[i] else 1
        return super().parse_args(args)

    def error(self, message):
        print(f"{self.prog}: error: {message} (see '{self.prog} --help')", file=sys.stderr)
        sys.exit(2)


def _parser(command):
    prog = "tessera tune" + ("" if command == "run" else " " + command)
    if command == "export":
        p = _Parser(prog, description="Writes the stored tuning results to DB.json, one JSON database.")
        p.add_argument("db", metavar="DB.json", help="the file to write")
        p.add_argument("--kernel", metavar="NAME", help="only this kernel's results")
    elif command == "import":
        p = _Parser(prog, description="Stores DB.json's tuning results in the cache directory, where the "
                                      "autotuner looks for them.")
        p.add_argument("db", metavar="DB.json", help="a database written by `tessera tune export`")
        p.add_argument("--replace", action="store_true", help="overwrite instead of merging timings")
    elif command == "list":
        p = _Parser(prog, description="Prints the stored tuning results, one a line.")
    else:
        p = _Parser(prog, usage=f"{prog} FILE --kernel NAME --grid GRID [options]\n"
                                f"       {prog} export|import|list ...",
                    description="\n\n".join(__doc__.split("\n\n")[2:]).rstrip(), epilog=_COMMANDS)
        p.add_argument("file", metavar="FILE", help="the kernel file")
        p.add_argument("--kernel", metavar="NAME", required=True, help="the @jit (or @autotune) function")
        p.add_argument("--arg", metavar="NAME=SPEC", action="append", default=[],
                       help="an argument: DTYPE[SHAPE], a literal or an expression (repeatable)")
        p.add_argument("--grid", metavar="GRID", required=True,
                       help="the grid: an expression or a lambda of the meta-parameters")
        p.add_argument("--config", metavar="NAME=VALUE,...", action="append", default=[],
                       help="a config, e.g. BLOCK=128,num_warps=8 (repeatable)")
        p.add_argument("--key", metavar="NAMES", help="comma-separated key arguments (default: the int arguments)")
    return p


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("export", "import", "list"):
        command, rest = argv[0], argv[1:]
    else:
        command, rest = "run", argv
    options = _parser(command).parse_args(rest)
    try:
        if command == "export":
            n = export_db(options.db, options.kernel)
            print(f"exported {n} tuning result{'s' if n != 1 else ''} to {options.db}")
        elif command == "import":
            n = import_db(options.db, options.replace)
            print(f"imported {n} tuning result{'s' if n != 1 else ''} into {at.tuning_dir()}")
        elif command == "list":
            for path, data in stored_results():
                best = at.Config.from_json(data["best"]) if data.get("best") else "-"
                print(f"{os.path.basename(path)[:12]}  {data['kernel']:<24} key={data['key']}  {data['device']}  "
                      f"{len(data['timings'])} timings  best: {best}")
        else:
            return tune(options)
    except UsageError as e:
        print(f"tessera tune: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
