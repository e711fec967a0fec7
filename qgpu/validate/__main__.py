"""python -m qgpu.validate: the same as `qgpu validate-gpu`."""

import argparse
import sys

from qgpu.validate import command

parser = argparse.ArgumentParser(prog="python -m qgpu.validate",
                                 description=command.__doc__.splitlines()[0])
command.add_arguments(parser)
sys.exit(command.main(parser.parse_args()))
