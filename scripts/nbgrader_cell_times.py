"""Time each cell of a course notebook the way `nbgrader autograde` runs it (benchmark, not a test).

    PYTHONPATH=$PWD python scripts/nbgrader_cell_times.py COURSE_DIR/submitted/<student>/<module>/<module>.ipynb

Prints kernel start-up, each code cell's wall-clock time and the points each check cell shows.
NBGRADER_EXECUTION is set, so the checks use the deterministic grading profile as in autograde.
"""

import os
import sys
import time

import nbclient
import nbformat

os.environ.setdefault("NBGRADER_EXECUTION", "autograde")
nb = nbformat.read(sys.argv[1], as_version=4)
start = time.perf_counter()
client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=600)
with client.setup_kernel():
    print(f"{'kernel start':28s} {time.perf_counter() - start:6.1f}s")
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        t = time.perf_counter()
        client.execute_cell(cell, index)
        shown = [o["data"]["text/plain"] for o in cell.outputs if o.output_type == "execute_result"]
        name = cell.metadata.get("nbgrader", {}).get("grade_id", f"cell {index}")
        print(f"{name:28s} {time.perf_counter() - t:6.1f}s  {shown[0] if shown else ''}")
print(f"{'total':28s} {time.perf_counter() - start:6.1f}s")
