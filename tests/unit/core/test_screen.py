"""The static screen of a submission (``autograder/core/screen.py``, issue 42): every way into the grading process
that a hostile answer writes is found, with its line, and no honest answer is: the references, the stubs and every
piece of code the galleries hold (correct alternatives and honest mistakes alike) pass it clean.

The screen is pure ``ast``: this whole file takes well under a second."""

import ast
import textwrap

import pytest
from support import EXERCISES, ROOT, SOLUTIONS

from autograder.core.screen import needs_review, screen

# Hostile one-liners (issue 42's three routes, and the ways around a first rule): each must be found.
HOSTILE = {
    "jax.jit replaced at import": "import jax\njax.jit = lambda f, **k: f\n",
    "a library function replaced through an alias": "import jax as j\nk = j\nk.vmap = lambda f, **kw: f\n",
    "a submodule's function replaced": "from jax import numpy as q\nq.where = None\n",
    "jax.make_jaxpr through setattr": "import jax\nsetattr(jax, 'make_jaxpr', None)\n",
    "a computed name": "import jax\nsetattr(jax, 'j' + 'it', None)\n",
    "a computed getattr": "import jax\nf = getattr(jax, ''.join(['j', 'it']))\n",
    "the module's __dict__": "import jax\njax.__dict__['jit'] = None\n",
    "vars of the module": "import jax\nvars(jax)['jit'] = None\n",
    "importlib": "import importlib\nimportlib.import_module('jax').jit = None\n",
    "__import__": "__import__('jax').jit = None\n",
    "a list around the module": "import jax\n[jax][0].jit = None\n",
    "del of a library function": "import jax\ndel jax.debug_key_reuse\n",
    "the builtins": "x = __builtins__\n",
    "a pytest plugin of its own": "import pytest\n",
    "a plugin manager found by gc": "import gc\n",
    "sys.modules": "import sys\nsys.modules['jax'].jit = None\n",
    "the channel written with os.write": "import os\nos.write(5, b'{}')\n",
    "os.write imported by name": "from os import write\n",
    "os through an alias": "import os as o\no.fdopen(5, 'w')\n",
    "ctypes": "import ctypes\n",
    "inspect": "import inspect\n",
    "types": "import types\n",
    "threading": "import threading\n",
    "exec": "exec('1')\n",
    "eval": "eval('1')\n",
    "compile": "code = compile('1', 'x', 'exec')\n",
    "globals": "globals()['x'] = 1\n",
    "__subclasses__": "x = ().__class__.__base__.__subclasses__()\n",
    "a function's code rewritten": "def f():\n    pass\nf.__code__ = None\n",
    "a function's globals": "def f():\n    pass\ng = f.__globals__\n",
    "getattr of a dunder": "x = getattr(1, '__class__')\n",
    "a relative import": "from . import x\n",
    "hidden in a function": "def f(x):\n    import gc\n    return x\n",
    # issue 41, door 4: the checks' module and their code, reached through allowed names
    "sys through another module": "import typing\nchecks = typing.sys.modules\n",
    "a frame's caller": "def f(frame):\n    return frame.f_back\n",
    "a code object's constants": "def f(code):\n    return code.co_consts\n",
    "getsource through a module": "def f(m, g):\n    return m.getsource(g)\n",
    "a descriptor through /proc": "path = '/proc/self/fd/3'\n",
    "memory through /proc": "path = b'/proc/self/mem'\n",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_each_way_into_the_grading_process_is_found_with_its_line(name):
    source = HOSTILE[name]
    found = screen(source)
    assert found, name
    assert all(1 <= f.line <= len(source.splitlines()) for f in found)
    assert needs_review("at_updates", source)[0].endswith(f"at_updates.py:{found[0].line}")


def test_defining_dunders_and_a_checkpoints_path_are_fine():
    source = (
        "import os\nimport jax\nimport flax.linen as nn\n"
        "class M(nn.Module):\n    def __call__(self, x):\n        return x\n"
        "class S:\n    def __init__(self):\n        super().__init__()\n"
        "def save(path):\n    os.makedirs(os.path.join(path, 'a'), exist_ok=True)\n    return os.fspath(path)\n"
        "name = save.__name__\n"
    )
    assert screen(source) == []


def code_in(path):
    """Every multi-line string of ``path`` that parses as Python: the galleries' answers, right and wrong."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "\n" in node.value:
            source = textwrap.dedent(node.value)
            try:
                ast.parse(source)
            except SyntaxError:
                continue
            yield node.lineno, source


def test_no_honest_answer_is_flagged():
    """The references, the stubs and every answer the galleries hold (correct alternatives and honest mistakes:
    an honest mistake is not a finding) pass the screen clean."""
    files = [
        *sorted(SOLUTIONS.glob("*.py")),
        *sorted(p for p in EXERCISES.glob("*.py") if not p.name.startswith("test_")),
    ]
    flagged = {str(p): screen(p.read_bytes()) for p in files}
    answers = 0
    for path in sorted((ROOT / "tests" / "galleries").glob("test_*.py")):
        for line, source in code_in(path):
            answers += 1
            flagged[f"{path.name}:{line}"] = screen(source)
    assert answers > 300  # the galleries were read
    assert {where: found for where, found in flagged.items() if found} == {}


def test_what_cannot_be_read_is_not_a_finding_but_too_deep_is():
    assert screen("def broken(:\n") == []
    assert screen("x = " + "+".join(["a"] * 200_000)) != []  # the parser's own recursion limit
    assert screen("x = " + "-" * 100_000 + "1") != []
