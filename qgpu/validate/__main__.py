"""python -m qgpu.validate: the same as `qgpu validate-gpu`."""

import argparse
import sys

from qgpu.cli import validate_gpu

parser = argparse.ArgumentParser(prog="python -m qgpu.validate",
                                 description=validate_gpu.__doc__.splitlines()[0])
validate_gpu.add_arguments(parser)
sys.exit(validate_gpu.main(parser.parse_args()))
