"""fuzz: the differential fuzzers, importable by the tests (CI runs seeded campaigns) and
runnable as campaigns:

    python -m qgpu.fuzz.cuda_kernels --cases 2000 --seed 1     # front end + interpreter vs C
    python -m qgpu.fuzz.float_kernels --cases 2000 --seed 1    # float32: front end + interp vs C
    python -m qgpu.fuzz.model_launches --cases 2000 --seed 1   # the compiled model vs interpreter

- cuda_lang: random UB-free integer CUDA programs and their C-semantics evaluation;
- cuda_kernels: those programs through the front end and the interpreter (or a reference
  file for `qgpu validate-gpu`);
- float_lang, float_host, float_kernels: the same for float32 expressions, the oracle
  being their native build on this CPU (clang's contraction placed explicitly);
- model_programs: random machine programs the model machine supports;
- model_launches: both kinds of launch on the compiled model, checked token by token.

Owns: fuzzing. May import every stage below the CLI (it drives the whole pipeline).
"""
