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
    with open(path, "w", encoding="utf-8") as f:
        json.dump(db, f, indent=1, sort_keys=True)
        f.write("\n")
    return len(entries)


def import_db(path, replace=False):
    """Writes each entry of the database into the cache directory; merges with what is there
    (the imported timings win) unless `replace`. Returns the number of entries written."""
    with open(path, encoding="utf-8") as f:
        db = json.load(f)
    if db.get("format") != DB_FORMAT or not isinstance(db.get("entries"), list):
        raise UsageError(f"{path} is not a tessera tuning database (format {DB_FORMAT})")
    d = at.tuning_dir()
    if d is None:
        raise UsageError("the cache is off (TESSERA_CACHE=off): there is nowhere to import to")
    written = 0
    for entry in db["entries"]:
        missing = [k for k in ("kernel", "source_sha256", "key", "device", "tessera", "timings") if k not in entry]
        if missing or entry.get("format") != at.FORMAT:
            raise UsageError(f"{path}: an entry lacks {', '.join(missing) or 'the format ' + at.FORMAT}")
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
        value = ast.literal_eval(v)
        (options if k in ("num_warps", "num_stages") else kwargs)[k] = value
    return at.Config(kwargs, **options)


def tune(options):
    import tessera
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

def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    prog = "tessera tune"
    if argv and argv[0] in ("export", "import", "list"):
        command, rest = argv[0], argv[1:]
    else:
        command, rest = "run", argv
    try:
        if command == "export":
            p = argparse.ArgumentParser(prog=f"{prog} export", description="Writes stored tuning results to DB.")
            p.add_argument("db")
            p.add_argument("--kernel")
            o = p.parse_args(rest)
            n = export_db(o.db, o.kernel)
            print(f"exported {n} tuning result{'s' if n != 1 else ''} to {o.db}")
        elif command == "import":
            p = argparse.ArgumentParser(prog=f"{prog} import", description="Stores DB's tuning results.")
            p.add_argument("db")
            p.add_argument("--replace", action="store_true", help="overwrite instead of merging timings")
            o = p.parse_args(rest)
            n = import_db(o.db, o.replace)
            print(f"imported {n} tuning result{'s' if n != 1 else ''} into {at.tuning_dir()}")
        elif command == "list":
            argparse.ArgumentParser(prog=f"{prog} list").parse_args(rest)
            for path, data in stored_results():
                best = at.Config.from_json(data["best"]) if data.get("best") else "-"
                print(f"{os.path.basename(path)[:12]}  {data['kernel']:<24} key={data['key']}  {data['device']}  "
                      f"{len(data['timings'])} timings  best: {best}")
        else:
            p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0],
                                        formatter_class=argparse.RawDescriptionHelpFormatter)
            p.add_argument("file", help="the kernel file")
            p.add_argument("--kernel", required=True, help="the @jit (or @autotune) function")
            p.add_argument("--arg", action="append", default=[], help="NAME=SPEC (DTYPE[SHAPE], literal or expression)")
            p.add_argument("--grid", required=True, help="the grid: an expression or a lambda of the meta-parameters")
            p.add_argument("--config", action="append", default=[], help="NAME=VALUE,...,num_warps=N (repeatable)")
            p.add_argument("--key", help="comma-separated key arguments (default: the int arguments)")
            return tune(p.parse_args(rest))
    except UsageError as e:
        print(f"tessera tune: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
