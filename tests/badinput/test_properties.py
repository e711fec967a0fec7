"""Property tests (hypothesis): whatever bytes, JSON or token ids reach the trace decoder,
and whatever argument strings reach the CLI's parser, the only exceptions are QgpuErrors
(one-line errors for a user), never a traceback."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qgpu.cli import build_parser
from qgpu.cli.trace import parse_stream
from qgpu.errors import QgpuError, UsageError
from qgpu.interp import run_launch
from qgpu.isa.asm import assemble
from qgpu.protocol import VOCAB_SIZE, decode_prompt, decode_trace, encode_prompt, expected_trace

PROG = assemble("""
block 0:
  tid r1
  shl r2, r1, 2
  ld.global r3, [r2]
  add r3, r3, 100
  br r3, 1, 2
block 1:
  st.global [r2], r3
  bar 2
block 2:
  exit
""")
PROMPT = encode_prompt(PROG, 2, 6, [1, 2, 3, 4, 5, 6])
TRACE = expected_trace(run_launch(PROG, 2, 6, [1, 2, 3, 4, 5, 6]).events)
SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2, VOCAB_SIZE + 2) | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=8) | st.dictionaries(
        st.sampled_from(["prompt", "trace", "x"]) | st.text(max_size=4), inner, max_size=4),
    max_leaves=30)


def _decode(text) -> None:
    try:
        prompt, trace = parse_stream(text)
        decode_trace(decode_prompt(prompt), trace)
    except QgpuError:
        pass


@SETTINGS
@given(st.binary(max_size=300))
def test_random_bytes(data):
    _decode(data)


@SETTINGS
@given(json_values)
def test_random_json(value):
    _decode(json.dumps(value))


@SETTINGS
@given(st.lists(st.integers(0, VOCAB_SIZE - 1), max_size=60), st.booleans())
def test_random_token_ids_after_a_valid_prompt(tokens, whole):
    _decode(json.dumps({"prompt": PROMPT if whole else tokens, "trace": tokens}))


@SETTINGS
@given(st.data())
def test_mutated_streams(data):
    """A valid stream with a few tokens replaced, dropped or repeated."""
    stream = PROMPT + TRACE
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(stream) - 1))
        how = data.draw(st.sampled_from(["set", "drop", "dup", "near"]))
        if how == "set":
            stream[i:i + 1] = [data.draw(st.integers(0, VOCAB_SIZE - 1))]
        elif how == "near":
            stream[i] = min(max(stream[i] + data.draw(st.integers(-3, 3)), 0), VOCAB_SIZE - 1)
        elif how == "drop":
            del stream[i]
        else:
            stream.insert(i, stream[i])
    _decode(json.dumps(stream))


def test_the_valid_stream_decodes():
    prompt, trace = parse_stream(json.dumps(PROMPT + TRACE))
    assert decode_trace(decode_prompt(prompt), trace)[-1].kind == "halt"


WORDS = ["run", "trace", "asm", "merge", "chat", "demo", "validate-gpu", "export-machine",
         "--grid", "--block", "--arg", "--engine", "model", "interp", "--check", "--forced",
         "--json", "--kernel", "--mem", "--run", "--base", "--out", "--model", "x=1",
         "zeros:3", "-1", "99999999999999", "--", "-", "--circuit", "--budget", "3"]


@SETTINGS
@given(st.lists(st.sampled_from(WORDS) | st.text(max_size=12), max_size=10))
def test_random_command_lines_parse_or_give_usage_errors(argv):
    parser, _ = build_parser()
    try:
        parser.parse_args(argv)
    except UsageError as exc:
        assert "\n" not in str(exc) and exc.prog.startswith("qgpu")
    except SystemExit as exc:       # --help / -h only
        assert exc.code == 0 and any(a.startswith(("-h", "--h")) for a in argv)


@pytest.mark.parametrize("argv", [[], ["frob"], ["run"], ["run", "k.cu", "--grid", "x"]])
def test_usage_errors_are_one_line_exit_1(argv, capsys):
    from qgpu.cli import main

    assert main(argv) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and ": error: " in err


ARG_TEXT = st.sampled_from(["1,2,3", "zeros:4", "zeros:", "zeros:-1", "zeros:99999", "0x10",
                            "-2147483649", "4294967296", "", ",", "1,,2", "abc", "1e3",
                            "0b101", " 7 ", "zeros:0x3"]) | st.text(max_size=10)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(a=ARG_TEXT, o=ARG_TEXT, n=ARG_TEXT, grid=st.sampled_from(["1", "2", "0", "5", "x"]),
       block=st.sampled_from(["4", "16", "17", "-1"]))
def test_random_run_arguments_give_results_or_one_line_errors(tmp_path_factory, capsys, a, o,
                                                              n, grid, block):
    from qgpu.cli import main

    src = tmp_path_factory.getbasetemp() / "k.cu"
    src.write_text("__global__ void k(const int *a, unsigned *o, int n) {\n"
                   "  if (threadIdx.x < n) o[threadIdx.x] = a[threadIdx.x] + n;\n}\n")
    rc = main(["run", str(src), "--grid", grid, "--block", block, "--json", "--engine", "interp",
               "--arg", f"a={a}", "--arg", f"o={o}", "--arg", f"n={n}"])
    err = capsys.readouterr().err
    assert rc in (0, 1)
    if rc == 1:
        assert err.startswith("qgpu run: error: ") and len(err.strip().splitlines()) == 1
