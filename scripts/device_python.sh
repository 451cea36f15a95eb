# Sourced by the device-run scripts: the device's Python made like a participant's install. landlockpy from the wheel
# carried in .whl/ (the worker's sandbox; without it runs say "sandbox: none"), and the bytecode caches compiled once
# per machine: the device runs Python with PYTHONDONTWRITEBYTECODE=1 and ships its site-packages without caches, so
# every process compiled torch's modules again (2.1-2.7 s each, results/h100/cheap_answers_2026-11-26/NOTES.md); an
# install made by pip compiles them, so wall times measured after this are what a participant's machine shows.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
# the CuTe DSL, where scripts/cute_wheels.sh installed it: its packages sit beside /tmp/site, named by a .pth file that
# Python reads only in a site directory, not on PYTHONPATH
[ -d /tmp/site/nvidia_cutlass_dsl/dsl_packages ] && export PYTHONPATH=$PYTHONPATH:/tmp/site/nvidia_cutlass_dsl/dsl_packages
python3 -c "import sysconfig; print('\n'.join(sorted({sysconfig.get_path(p) for p in ('stdlib', 'purelib', 'platlib')})))" \
  | xargs python3 -m compileall -q -j 0 > /dev/null 2>&1
echo "bytecode caches compiled" >> "$OUT/env.txt"
