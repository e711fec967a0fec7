"""Issue 36's whole-file rows on the CLI: a file as a tutorial writes it runs; what qgpu
cannot run (a tile wider than the 4-lane warp, a header nobody has, a clock_t array
parameter) is one line naming file:line, exit 1."""

import json
from pathlib import Path

import pytest

from qgpu.cli import main

from .test_rows import one_error

CORPUS = Path(__file__).resolve().parents[2] / "kernels" / "corpus"

WIDE_TILE = b"""#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
__global__ void k(int *o) {
  cg::thread_block_tile<64> t = cg::tiled_partition<64>(cg::this_thread_block());
  o[threadIdx.x] = cg::reduce(t, 1, cg::plus<int>());
}
"""
WARP_TILE = WIDE_TILE.replace(b"<64>", b"<32>")
NO_HEADER = b"#include <helper_image.h>\n__global__ void k(int *o) { o[0] = 1; }\n"
CLOCK_ARRAY = b"__global__ void k(clock_t *o) { o[threadIdx.x] = clock(); }\n"


def test_a_tutorial_file_runs_from_the_cli(capsys):
    """host_stdlib.cu: exit/rand/memset/clock/ceil without includes, `<< <...>> >`."""
    assert main(["run", str(CORPUS / "host_stdlib.cu"), "--grid", "3", "--block", "4",
                 "--engine", "interp", "--json", "--arg", "n=10", "--arg", "a=3",
                 "--arg", "x=1,2,3,4,5,6,7,8,9,10", "--arg", "y=zeros:10"]) == 0
    assert json.loads(capsys.readouterr().out)["args"]["y"] == [3 * v for v in range(1, 11)]


@pytest.mark.parametrize("source, match", [
    (WIDE_TILE, "wide.cu:5: kernel k: tiled_partition<64>: a tile has 1, 2, 4, 8, 16 or "
                "32 threads"),
    (NO_HEADER, "wide.cu:1:10: fatal error: 'helper_image.h' file not found (qgpu parses "
                "host code against the system's C/C++ headers"),
    (CLOCK_ARRAY, "wide.cu:1: kernel k: parameter 'clock_t *o' is 64 bits on a GPU"),
])
def test_what_cannot_run_is_one_line(tmp_path, capsys, source, match):
    (tmp_path / "wide.cu").write_bytes(source)
    err = one_error(capsys, "run", ["run", str(tmp_path / "wide.cu"), "--grid", "1",
                                    "--block", "4", "--engine", "interp",
                                    "--arg", "o=zeros:4"])
    assert match in err, err


def test_a_tile_of_cudas_whole_warp_reduces_over_32_lanes(tmp_path, capsys):
    (tmp_path / "warp.cu").write_bytes(WARP_TILE)
    assert main(["run", str(tmp_path / "warp.cu"), "--grid", "1", "--block", "32",
                 "--engine", "interp", "--json", "--arg", "o=zeros:32"]) == 0
    assert json.loads(capsys.readouterr().out)["args"]["o"] == [32] * 32
