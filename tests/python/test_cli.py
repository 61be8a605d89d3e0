"""The `tessera` command line (compiler/cli/CommandLine.h, python/tessera/tune.py): every command
answers --help, --opt=value and --opt value are one thing, numbers are checked with the option
named, and a wrong command line is one line with a hint to --help and exit status 2 (docs/cli.md)."""
import subprocess

import pytest

from conftest import CLI, ROOT, run_cli

VECTOR_ADD = ["compile", "kernels/vector_add.py", "--kernel", "add_kernel",
              "--signature", "*fp32,*fp32,*fp32,i32", "--constexpr", "BLOCK_SIZE=64"]


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path / "cache"))


def cli(*args):
    """run_cli with this process's environment (the cache of own_cache)."""
    return subprocess.run([str(CLI), *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def one_error_line(proc, status):
    assert proc.returncode == status, proc.stdout + proc.stderr
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


# ------------------------------------------------------------------- --help

COMMANDS = [["compile"], ["aot"], ["list"], ["cache"], ["cache", "info"], ["cache", "list"], ["cache", "verify"],
            ["cache", "clear"], ["version"], ["tune"], ["tune", "export"], ["tune", "import"], ["tune", "list"]]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_every_command_answers_help(command, flag):
    proc = cli(*command, flag)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout.startswith("usage: tessera " + " ".join(command)), proc.stdout
    if command not in (["cache"], ["tune", "list"]):
        assert "--help" in proc.stdout  # the options are listed, -h/--help among them


def test_help_wins_over_the_other_arguments():
    assert cli("list", "--help", "no-such-file.py").stdout.startswith("usage: tessera list FILE")
    assert cli("compile", "--kernel", "--help").stdout.startswith("usage: tessera compile")


def test_top_level_help_lists_every_command():
    out = run_cli(["--help"], check=True).stdout
    for name in ("compile FILE", "aot [MANIFEST]", "list FILE", "cache", "tune", "version"):
        assert "\n  " + name in out
    assert run_cli(["-h"], check=True).stdout == out


def test_cache_help_lists_its_commands():
    out = cli("cache", "--help").stdout
    for name in ("info", "list", "verify", "clear [--all]"):
        assert "\n  " + name + " " in out


def test_tune_help_lists_its_commands():
    out = cli("tune", "--help").stdout
    for name in ("tune export DB.json", "tune import DB.json", "tune list"):
        assert name in out


def test_compile_help_lists_every_option():
    out = cli("compile", "--help").stdout
    for option in ("--kernel NAME", "--signature SIG", "--constexpr K=V", "--num-warps N", "--num-stages N",
                   "--arch ARCH", "--backend NAME", "--emit STAGE", "--debug", "--tensor-cores", "--no-tensor-cores",
                   "--fp-fusion", "--no-fp-fusion", "--maxnreg N", "--stop-after PASS", "-o, --output FILE"):
        assert "\n  " + option in out, option
    assert "software-pipeline" in out  # --stop-after's pass names


# ----------------------------------------------------- --opt=value, --opt value

def test_option_equals_value_is_the_same_as_two_arguments():
    spaced = run_cli(VECTOR_ADD + ["--num-warps", "8", "--emit", "ir"], check=True).stdout
    joined = run_cli(["compile", "kernels/vector_add.py", "--kernel=add_kernel", "--signature=*fp32,*fp32,*fp32,i32",
                      "--constexpr=BLOCK_SIZE=64", "--num-warps=8", "--emit=ir"], check=True).stdout
    assert joined == spaced and "num_warps = 8" in joined


def test_options_and_the_file_in_any_order_and_output_both_ways(tmp_path):
    args = VECTOR_ADD[2:] + ["--emit", "ir"]
    expected = run_cli(VECTOR_ADD + ["--emit", "ir"], check=True).stdout
    assert run_cli(["compile"] + args + ["kernels/vector_add.py"], check=True).stdout == expected
    run_cli(["compile", "kernels/vector_add.py"] + args + [f"--output={tmp_path / 'a.ir'}"], check=True)
    run_cli(["compile", "kernels/vector_add.py"] + args + ["-o", str(tmp_path / "b.ir")], check=True)
    assert (tmp_path / "a.ir").read_text() == (tmp_path / "b.ir").read_text() == expected


def test_double_dash_ends_the_options(tmp_path):
    odd = tmp_path / "-k.py"
    odd.write_text((ROOT / "kernels" / "vector_add.py").read_text())
    proc = subprocess.run([str(CLI), "list", "--", "-k.py"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.split() == ["add_kernel"], proc.stderr


def test_tune_takes_option_equals_value(tmp_path):
    db = tmp_path / "db.json"
    proc = cli("tune", "export", str(db), "--kernel=add_kernel")
    assert proc.returncode == 0 and "exported 0 tuning results" in proc.stdout, proc.stderr


# ------------------------------------------------------------------ numbers

@pytest.mark.parametrize("args,message", [
    (["--num-warps", "-4"], "--num-warps must be a power of 2 between 1 and 32, got -4"),
    (["--num-warps=-4"], "--num-warps must be a power of 2 between 1 and 32, got -4"),
    (["--num-warps", "3"], "--num-warps must be a power of 2 between 1 and 32, got 3"),
    (["--num-warps", "4294967300"], "--num-warps must be a power of 2 between 1 and 32, got 4294967300"),
    (["--num-warps", "99999999999999999999999"],
     "--num-warps must be a power of 2 between 1 and 32, got 99999999999999999999999"),
    (["--num-warps", "four"], "--num-warps needs an integer, got 'four'"),
    (["--num-warps", "4.0"], "--num-warps needs an integer, got '4.0'"),
    (["--num-warps", ""], "--num-warps needs an integer, got ''"),
    (["--num-stages", "0"], "--num-stages must be a positive integer, got 0"),
    (["--num-stages", "-2"], "--num-stages must be a positive integer, got -2"),
    (["--num-stages", "2147483648"], "--num-stages must be a positive integer, got 2147483648"),
    (["--maxnreg", "8"], "--maxnreg must be between 16 and 255 registers a thread (or 0: no limit), got 8"),
    (["--maxnreg", "-1"], "--maxnreg must be between 16 and 255 registers a thread (or 0: no limit), got -1"),
])
def test_numbers_are_checked_with_the_option_named(args, message):
    assert one_error_line(run_cli(VECTOR_ADD + args), 1) == "tessera: error: " + message


@pytest.mark.parametrize("num_stages", [0, -1, 1, 2, 2 ** 31 - 1, 2 ** 31])
def test_num_stages_follows_the_python_rule(num_stages):
    import tessera
    try:
        tessera.compile(str(ROOT / "kernels" / "vector_add.py"), "*fp32,*fp32,*fp32,i32", {"BLOCK_SIZE": 64},
                        kernel="add_kernel", num_stages=num_stages)
        python_accepts = True
    except ValueError as e:
        assert "num_stages must be a positive int" in str(e)
        python_accepts = False
    proc = run_cli(VECTOR_ADD + ["--num-stages", str(num_stages), "--emit", "ir"])
    assert (proc.returncode == 0) == python_accepts, proc.stderr
    assert python_accepts == (num_stages >= 1 and num_stages < 2 ** 31)


def test_manifest_numbers_are_checked_with_the_line(tmp_path):
    manifest = tmp_path / "manifest.txt"
    manifest.write_text(f"{ROOT}/kernels/vector_add.py add_kernel *fp32,*fp32,*fp32,i32 BLOCK_SIZE=64 num_warps=-4\n")
    line = one_error_line(cli("aot", str(manifest), "-o", str(tmp_path / "out")), 1)
    assert line == f"tessera: error: {manifest}:1: num_warps must be a power of 2 between 1 and 32, got -4"
    manifest.write_text(f"{ROOT}/kernels/vector_add.py add_kernel *fp32,*fp32,*fp32,i32 BLOCK_SIZE=64 maxnreg=x\n")
    line = one_error_line(cli("aot", str(manifest), "-o", str(tmp_path / "out")), 1)
    assert line == f"tessera: error: {manifest}:1: maxnreg needs an integer, got 'x'"


def test_tune_configs_follow_the_same_rules(tmp_path):
    args = ["tune", "kernels/vector_add.py", "--kernel", "add_kernel", "--grid", "(4,)"]
    line = one_error_line(cli(*args, "--config", "BLOCK_SIZE=64,num_stages=0"), 1)
    assert line == ("tessera tune: error: --config 'BLOCK_SIZE=64,num_stages=0': "
                    "num_stages must be a positive integer, got 0")
    line = one_error_line(cli(*args, "--config", "BLOCK_SIZE=64,num_warps=-4"), 1)
    assert line.endswith("num_warps must be a power of 2 between 1 and 32, got -4")
    line = one_error_line(cli(*args, "--config", "BLOCK_SIZE=sixty"), 1)
    assert line.endswith("the value of BLOCK_SIZE must be a Python literal, got 'sixty'")


# --------------------------------------------------------- files that are not

@pytest.mark.parametrize("args", [
    VECTOR_ADD[:1] + ["kernels"] + VECTOR_ADD[2:],
    ["compile", "kernels", "--emit", "ast"],
    ["list", "kernels"],
], ids=["compile", "compile-ast", "list"])
def test_a_directory_as_file_is_one_error(args):
    assert one_error_line(run_cli(args), 1) == "tessera: error: 'kernels' is a directory, not a kernel file"


def test_a_directory_as_manifest_is_one_error():
    line = one_error_line(run_cli(["aot", "kernels"]), 1)
    assert line == "tessera: error: 'kernels' is a directory, not a manifest file"


def test_a_directory_as_output_is_one_error(tmp_path):
    line = one_error_line(run_cli(VECTOR_ADD + ["-o", str(tmp_path)]), 1)
    assert line == f"tessera: error: cannot write '{tmp_path}': Is a directory"
    (tmp_path / "file").write_text("")
    line = one_error_line(run_cli(["aot", "kernels/manifest.txt", "-o", str(tmp_path / "file")]), 1)
    assert line == f"tessera: error: -o '{tmp_path / 'file'}' is a file, not a directory"


def test_a_missing_file_says_why():
    assert (one_error_line(run_cli(["list", "no-such-file.py"]), 1)
            == "tessera: error: cannot read 'no-such-file.py': No such file or directory")


def test_a_directory_for_tune_is_one_error(tmp_path):
    line = one_error_line(cli("tune", "kernels", "--kernel", "k", "--grid", "(1,)"), 1)
    assert line == "tessera tune: error: 'kernels' is a directory, not a kernel file"
    line = one_error_line(cli("tune", "import", str(tmp_path)), 1)
    assert line == f"tessera tune: error: '{tmp_path}' is a directory, not a tuning database (a .json file)"
    line = one_error_line(cli("tune", "export", str(tmp_path)), 1)
    assert line == f"tessera tune: error: cannot write '{tmp_path}': Is a directory"


# ------------------------------------------------- tune import of what is not a database

@pytest.mark.parametrize("text,problem", [
    ("not json\n", "{path}:1:1: not JSON: Expecting value"),
    ('{"format": "tessera-tuning-db-1",\n "entries": [}\n', "{path}:2:14: not JSON: Expecting value"),
    ("", "{path}:1:1: not JSON: Expecting value"),
    ("[1, 2]", "{path} is not a tessera tuning database (format tessera-tuning-db-1)"),
    ('{"format": "tessera-tuning-db-1", "entries": [7]}', "{path}: entry 0 is not an object (a JSON {{...}}), got int"),
    ('{"format": "tessera-tuning-db-1", "entries": [{"kernel": "k"}]}',
     "{path}: entry 0 lacks source_sha256, key, device, tessera, timings"),
])
def test_tune_import_of_bad_json_is_one_error_naming_the_file(tmp_path, text, problem):
    path = tmp_path / "db.json"
    path.write_text(text)
    line = one_error_line(cli("tune", "import", str(path)), 1)
    assert line == "tessera tune: error: " + problem.format(path=path)


def test_tune_import_of_binary_is_one_error(tmp_path):
    path = tmp_path / "db.json"
    path.write_bytes(b"\x89PNG\r\n")
    line = one_error_line(cli("tune", "import", str(path)), 1)
    assert line == f"tessera tune: error: {path}: not JSON: byte 0 is not UTF-8 text"


def test_tune_list_skips_a_result_that_is_not_an_object(tmp_path):
    results = tmp_path / "cache" / "autotune"
    results.mkdir(parents=True)
    (results / ("0" * 64 + ".json")).write_text("[1]")
    proc = cli("tune", "list")
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    assert "Traceback" not in proc.stderr and "is unreadable (not a tessera tuning result)" in proc.stderr


def test_tune_grid_that_is_not_python_is_one_error():
    line = one_error_line(cli("tune", "kernels/vector_add.py", "--kernel", "add_kernel", "--grid", "(4,"), 1)
    assert line == "tessera tune: error: --grid '(4,' is not a Python expression ('(' was never closed)"


# ------------------------------------------------------- wrong command lines

@pytest.mark.parametrize("args,message", [
    (VECTOR_ADD + ["--kernal", "x"],
     "unknown option '--kernal' for 'tessera compile'; did you mean '--kernel'? (see 'tessera compile --help')"),
    (VECTOR_ADD + ["--frobnicate=3"],
     "unknown option '--frobnicate' for 'tessera compile' (see 'tessera compile --help')"),
    (VECTOR_ADD + ["-x"], "unknown option '-x' for 'tessera compile' (see 'tessera compile --help')"),
    (VECTOR_ADD + ["--num-warps"], "--num-warps needs a value: --num-warps N (see 'tessera compile --help')"),
    (VECTOR_ADD + ["-o"], "-o needs a value: -o FILE (see 'tessera compile --help')"),
    (VECTOR_ADD + ["--debug=1"], "--debug takes no value, got '--debug=1' (see 'tessera compile --help')"),
    (VECTOR_ADD + ["other.py"],
     "unexpected argument 'other.py' ('tessera compile' takes FILE) (see 'tessera compile --help')"),
    (["compile", "--kernel", "k"], "'tessera compile' needs FILE (see 'tessera compile --help')"),
    (["compile", "kernels/vector_add.py", "--signature", "i32"],
     "'tessera compile' needs --kernel NAME (see 'tessera compile --help')"),
    (["compile", "kernels/vector_add.py", "--kernel", "add_kernel"],
     "'tessera compile' needs --signature SIG (e.g. \"*fp32,*fp32,i32\") (see 'tessera compile --help')"),
    (["list"], "'tessera list' needs FILE (see 'tessera list --help')"),
    (["list", "a.py", "b.py"], "unexpected argument 'b.py' ('tessera list' takes FILE) (see 'tessera list --help')"),
    (["aot", "--arch"], "--arch needs a value: --arch ARCH (see 'tessera aot --help')"),
    (["version", "now"], "unexpected argument 'now' ('tessera version' takes no arguments) "
                         "(see 'tessera version --help')"),
    (["compil"], "unknown command 'compil' for 'tessera'; did you mean 'compile'? (see 'tessera --help')"),
    (["frobnicate"], "unknown command 'frobnicate' for 'tessera'; the commands are compile, aot, list, cache, tune, "
                     "version (see 'tessera --help')"),
    (["--frobnicate"], "unknown option '--frobnicate' for 'tessera'; the commands are compile, aot, list, cache, "
                       "tune, version (see 'tessera --help')"),
    (["cache", "inf"], "unknown command 'inf' for 'tessera cache'; did you mean 'info'? (see 'tessera cache --help')"),
    (["cache", "info", "--all"], "unknown option '--all' for 'tessera cache info' (see 'tessera cache info --help')"),
    (["cache", "clear", "--al"],
     "unknown option '--al' for 'tessera cache clear'; did you mean '--all'? (see 'tessera cache clear --help')"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_a_wrong_command_line_is_one_line_and_status_2(args, message):
    assert one_error_line(run_cli(args), 2) == "tessera: error: " + message


@pytest.mark.parametrize("args,message", [
    (["tune", "export", "--frob"], "tessera tune export: error: unknown option '--frob' for 'tessera tune export' "
                                   "(see 'tessera tune export --help')"),
    (["tune", "list", "--all"], "tessera tune list: error: unknown option '--all' for 'tessera tune list' "
                                "(see 'tessera tune list --help')"),
    (["tune", "import"], "tessera tune import: error: the following arguments are required: DB.json "
                         "(see 'tessera tune import --help')"),
    (["tune", "kernels/vector_add.py", "--kernel"], "tessera tune: error: argument --kernel: expected one argument "
                                                    "(see 'tessera tune --help')"),
    (["tune", "kernels/vector_add.py", "--kern", "add_kernel", "--grid", "(1,)"],
     "tessera tune: error: unknown option '--kern' for 'tessera tune' (see 'tessera tune --help')"),
])
def test_a_wrong_tune_command_line_is_one_line_and_status_2(args, message):
    assert one_error_line(cli(*args), 2) == message


@pytest.mark.parametrize("args", [[], ["cache"]], ids=["tessera", "cache"])
def test_a_missing_command_prints_the_usage_and_status_2(args):
    proc = run_cli(args)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("usage: tessera " + " ".join(args))
