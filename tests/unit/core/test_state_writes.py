"""Module state decided from the source (``autograder/core/state_writes.py``, issue 42): every route by which a call
can write state that outlives it is flagged with its line, and no honest code is: the references, the stubs and
every correct answer of the galleries pass clean, and every wrong answer of the galleries that the runtime check
catches writing module state the analysis flags too. Pure ``ast``: this file takes about a second."""

import ast
import re
import textwrap

import pytest
from support import EXERCISES, ROOT, SOLUTIONS, with_function

from autograder.core.course import load_course
from autograder.core.from_source import ANALYSES, decide_from_source
from autograder.core.state_writes import module_state_failure, writes_of

# (source, function judged, what the message must say): each must be flagged. Every route of the issue, then
# variations of them.
HOSTILE = {
    "global-rebinding": (
        "N = 0\ndef f(x):\n    global N\n    N += 1\n    return x\n",
        "rebinds the module-level variable 'N'",
    ),
    "global-assignment": (
        "def f(x):\n    global SEEN\n    SEEN = x\n    return x\n",
        "rebinds the module-level variable 'SEEN'",
    ),
    "global-delete": (
        "G = 1\ndef f(x):\n    global G\n    del G\n    return x\n",
        "rebinds the module-level variable 'G'",
    ),
    "nonlocal-in-a-factory": (
        "def make():\n    n = 0\n    def f(x):\n        nonlocal n\n        n += 1\n        return x\n    return f\nf = make()\n",
        "rebinds 'n' of an enclosing function",
    ),
    "subscript-store": ("C = {}\ndef f(x):\n    C['k'] = x\n    return x\n", "module-level variable 'C'"),
    # a global bound outside the source the grader reads (a notebook's other cell, through the generated module's
    # globals().update; a star import): still the module's variable, and said so
    "global-from-the-notebook-namespace": (
        "import autograder.notebooks.runtime as _nb\nglobals().update(_nb.namespace('nb1'))\n\n"
        "def f(x):\n    _seen.append(x)\n    return x\n",
        "changes the contents of the module-level variable '_seen' (calls _seen.append)",
    ),
    "global-from-a-star-import": (
        "from helpers import *\ndef f(x):\n    SEEN[x] = 1\n    return x\n",
        "module-level variable 'SEEN'",
    ),
    "nested-subscript-store": ("C = {'a': {}}\ndef f(x):\n    C['a']['k'] = x\n    return x\n", "'C'"),
    "attribute-store": ("class S: pass\nST = S()\ndef f(x):\n    ST.last = x\n    return x\n", "'ST'"),
    "del-item": ("C = {1: 2}\ndef f(x):\n    del C[1]\n    return x\n", "deletes C[1]"),
    "augmented-item": ("STEPS = {'n': 0}\ndef f(x):\n    STEPS['n'] += 1\n    return x\n", "'STEPS'"),
    "append": ("CALLS = []\ndef f(x):\n    CALLS.append(1)\n    return x\n", "calls CALLS.append"),
    "extend": ("L = []\ndef f(x):\n    L.extend([x])\n    return x\n", "L.extend"),
    "update": ("D = {}\ndef f(x):\n    D.update(a=x)\n    return x\n", "D.update"),
    "setdefault": ("D = {}\ndef f(x):\n    D.setdefault('a', x)\n    return x\n", "D.setdefault"),
    "pop": ("L = [1, 2]\ndef f(x):\n    L.pop()\n    return x\n", "L.pop"),
    "insert": ("L = []\ndef f(x):\n    L.insert(0, x)\n    return x\n", "L.insert"),
    "clear": ("D = {1: 1}\ndef f(x):\n    D.clear()\n    return x\n", "D.clear"),
    "set-add": ("S = set()\ndef f(x):\n    S.add(1)\n    return x\n", "S.add"),
    "set-discard": ("S = {1}\ndef f(x):\n    S.discard(1)\n    return x\n", "S.discard"),
    "sort": ("L = [2, 1]\ndef f(x):\n    L.sort()\n    return x\n", "L.sort"),
    "numpy-fill": ("import numpy as np\nA = np.zeros(3)\ndef f(x):\n    A.fill(1.0)\n    return x\n", "A.fill"),
    "numpy-item-store": ("import numpy as np\nA = np.zeros(3)\ndef f(x):\n    A[0] = 1.0\n    return x\n", "'A'"),
    "numpy-copyto": (
        "import numpy as np\nA = np.zeros(3)\ndef f(x):\n    np.copyto(A, x)\n    return x\n",
        "np.copyto",
    ),
    "numpy-out": ("import numpy as np\nA = np.zeros(3)\ndef f(x):\n    np.add(x, 1, out=A)\n    return x\n", "out="),
    "ufunc-at": (
        "import numpy as np\nA = np.zeros(3)\ndef f(x):\n    np.add.at(A, [0], 1)\n    return x\n",
        "np.add.at",
    ),
    "torch-in-place": ("import torch\nT = torch.zeros(3)\ndef f(x):\n    T.add_(1)\n    return x\n", "T.add_"),
    "torch-in-place-function": (
        "import torch\nW = torch.zeros(3)\ndef f(x):\n    torch.nn.init.normal_(W)\n    return x\n",
        "torch.nn.init.normal_",
    ),
    "random-shuffle": ("import random\nL = [1, 2]\ndef f(x):\n    random.shuffle(L)\n    return x\n", "random.shuffle"),
    "next-on-a-global-iterator": ("IT = iter(range(9))\ndef f(x):\n    return x + next(IT)\n", "next()"),
    "a-global-generator-in-a-loop": (
        "G = (i for i in range(9))\ndef f(x):\n    for i in G:\n        return x + i\n",
        "'G'",
    ),
    "a-global-random-generator": (
        "import numpy as np\nRNG = np.random.default_rng(0)\ndef f(x):\n    return x + RNG.normal()\n",
        "'RNG'",
    ),
    "setattr": ("class S: pass\nST = S()\ndef f(x):\n    setattr(ST, 'a', x)\n    return x\n", "setattr"),
    "delattr": ("class S:\n    a = 1\ndef f(x):\n    delattr(S, 'a')\n    return x\n", "delattr"),
    "getattr-of-a-mutating-method": ("L = []\ndef f(x):\n    getattr(L, 'append')(x)\n    return x\n", "getattr"),
    "operator-setitem": (
        "import operator\nG = {}\ndef f(x):\n    operator.setitem(G, 'a', x)\n    return x\n",
        "setitem",
    ),
    "from-operator-setitem": (
        "from operator import setitem\nG = {}\ndef f(x):\n    setitem(G, 'a', x)\n    return x\n",
        "setitem",
    ),
    "operator-methodcaller": (
        "import operator\nG = []\ndef f(x):\n    operator.methodcaller('append', x)(G)\n    return x\n",
        "methodcaller",
    ),
    "unbound-list-append": ("G = []\ndef f(x):\n    list.append(G, x)\n    return x\n", "list.append"),
    "unbound-dict-update": ("G = {}\ndef f(x):\n    dict.update(G, a=x)\n    return x\n", "dict.update"),
    "bound-method-kept": ("G = []\ndef f(x):\n    add = G.append\n    add(x)\n    return x\n", "G.append"),
    "bound-method-mapped": ("G = []\ndef f(xs):\n    list(map(G.append, xs))\n    return xs\n", "G.append"),
    "alias": ("CACHE = {}\ndef f(x):\n    d = CACHE\n    d['k'] = x\n    return x\n", "writes d['k']"),
    "alias-through-a-tuple": (
        "CACHE = {}\ndef f(x):\n    d, e = CACHE, 1\n    d['k'] = x\n    return x\n",
        "writes d['k']",
    ),
    "alias-rebound-later": (
        "CACHE = {}\ndef f(x):\n    d = {}\n    if x:\n        d = CACHE\n    d['k'] = x\n    return x\n",
        "d['k']",
    ),
    "alias-in-a-loop": ("A, B = {}, {}\ndef f(x):\n    for d in (A, B):\n        d['k'] = x\n    return x\n", "d['k']"),
    "alias-walrus": (
        "C = []\ndef f(x):\n    if (d := C) is not None:\n        d.append(x)\n    return x\n",
        "d.append",
    ),
    "alias-through-asarray": (
        "import numpy as np\nA = np.zeros(3)\ndef f(x):\n    v = np.asarray(A)\n    v[0] = 1\n    return x\n",
        "v[0]",
    ),
    "alias-from-dict-get": ("C = {'a': []}\ndef f(x):\n    C.get('a').append(x)\n    return x\n", "append"),
    "alias-of-an-item-of-a-copy": (
        "C = {'a': []}\ndef f(x):\n    d = dict(C)\n    d['a'].append(x)\n    return x\n",
        "append",
    ),
    "through-a-helper": (
        "CACHE = {}\ndef _h(k, v):\n    CACHE[k] = v\ndef f(x):\n    _h(1, x)\n    return x\n",
        "(in _h, which f runs)",
    ),
    "through-a-helper-of-a-helper": (
        "L = []\ndef _a(x):\n    L.append(x)\ndef _b(x):\n    _a(x)\ndef f(x):\n    _b(x)\n    return x\n",
        "in _a",
    ),
    "through-a-helper-passed-along": (
        "L = []\ndef _log(x):\n    L.append(x)\ndef f(xs):\n    return list(map(_log, xs))\n",
        "in _log",
    ),
    "helper-changes-an-argument-passed-a-global": (
        "import numpy as np\nA = np.zeros(3)\ndef _bump(a):\n    a += 1\ndef f(x):\n    _bump(A)\n    return x\n",
        "passes A to _bump",
    ),
    "through-a-method": (
        "class Log:\n    def __init__(self):\n        self.items = []\n    def add(self, x):\n        self.items.append(x)\nLOG = Log()\ndef f(x):\n    LOG.add(x)\n    return x\n",
        "self.items.append",
    ),
    "a-method-storing-on-self": (
        "class Counter:\n    def __init__(self):\n        self.n = 0\n    def tick(self):\n        self.n = self.n + 1\nC = Counter()\ndef f(x):\n    C.tick()\n    return x\n",
        "writes self.n",
    ),
    "a-flax-call-storing-on-self": (
        "import flax.linen as nn\nclass M(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n        self.seen = x\n        return x\ndef f(x):\n    return x\n",
        "self.seen",
    ),
    "a-class-attribute": ("class C:\n    seen = []\ndef f(x):\n    C.seen.append(x)\n    return x\n", "C.seen.append"),
    "a-class-attribute-through-self": (
        "class C:\n    seen = []\n    def __call__(self, x):\n        self.seen.append(x)\n        return x\nc = C()\ndef f(x):\n    return c(x)\n",
        "self.seen.append",
    ),
    "a-class-attribute-through-type": (
        "class C:\n    n = 0\n    def bump(self):\n        type(self).n += 1\ndef f(x):\n    return x\n",
        "type(self).n",
    ),
    "mutable-default": ("def f(x, seen=[]):\n    seen.append(x)\n    return x\n", "a default argument made once"),
    "mutable-default-augmented": ("def f(x, acc=[]):\n    acc += [x]\n    return x\n", "a default argument"),
    "mutable-default-of-a-helper": (
        "def _h(x, memo={}):\n    memo[x] = 1\ndef f(x):\n    _h(x)\n    return x\n",
        "'memo'",
    ),
    "closure-made-by-a-factory": (
        "def make():\n    cache = {}\n    def f(x):\n        cache[x] = 1\n        return x\n    return f\nf = make()\n",
        "'cache' of an enclosing function",
    ),
    "closure-made-by-a-factory-jitted": (
        "import jax\ndef make():\n    seen = []\n    def g(x):\n        seen.append(x)\n        return x\n    return g\nf = jax.jit(make())\n",
        "'seen'",
    ),
    "an-iterator-kept-by-a-factory": (
        "def make():\n    it = iter(range(9))\n    def f(x):\n        return x + next(iter(it))\n    return f\nf = make()\n",
        "next()",
    ),
    "an-object-bound-to-a-global-in-init": (
        "G = {}\nclass C:\n    def __init__(self):\n        self.d = G\n        self.d['k'] = 1\ndef f(x):\n    return C()\n",
        "self.d['k']",
    ),
    "a-method-called-from-init-and-elsewhere": (
        "class C:\n    def __init__(self):\n        self.fill()\n    def fill(self):\n        self.n = 1\n"
        "c = C()\ndef f(x):\n    c.fill()\n    return x\n",
        "self.n",
    ),
    "a-generator-attribute-drawn-outside-init": (
        "import numpy as np\nclass D:\n    def __init__(self):\n        self.rng = np.random.RandomState(0)\n"
        "    def draw(self):\n        return self.rng.normal()\nd = D()\ndef f(x):\n    return x + d.draw()\n",
        "self.rng",
    ),
    "an-earlier-definition-kept-under-another-name": (
        "L = []\ndef f(x):\n    L.append(x)\n    return x\n_kept = f\ndef f(x):\n    return _kept(x)\n",
        "L.append",
    ),
    "an-earlier-class-kept-under-another-name": (
        "class C:\n    def go(self):\n        self.n = 1\n_K = C\nclass C:\n    pass\nk = _K()\ndef f(x):\n    k.go()\n    return x\n",
        "self.n",
    ),
    "a-decorator-of-the-module": (
        "CALLS = []\ndef counting(fn):\n    def wrapped(*a):\n        CALLS.append(1)\n        return fn(*a)\n    return wrapped\n"
        "@counting\ndef f(x):\n    return x\n",
        "CALLS.append",
    ),
    "a-decorator-factory-keeping-a-closure": (
        "def memo(fn):\n    seen = {}\n    def wrapped(x):\n        seen[x] = 1\n        return fn(x)\n    return wrapped\n"
        "@memo\ndef f(x):\n    return x\n",
        "'seen' of an enclosing function",
    ),
    "a-default-made-by-a-factory": (
        "def make():\n    log = []\n    return log.append\ndef f(x, _log=make()):\n    _log(x)\n    return x\n",
        "log.append",
    ),
    "a-class-attribute-made-by-a-factory": (
        "def make():\n    n = [0]\n    def tick():\n        n[0] += 1\n    return tick\nclass C:\n    tick = staticmethod(make())\n"
        "def f(x):\n    C.tick()\n    return x\n",
        "'n' of an enclosing function",
    ),
    "lambda-at-module-level": ("L = []\nf = lambda x: L.append(x) or x\n", "L.append"),
    "lru-cache": (
        "import functools\n@functools.lru_cache(maxsize=None)\ndef f(x):\n    return x\n",
        "functools.lru_cache",
    ),
    "cache": ("import functools\n@functools.cache\ndef f(x):\n    return x\n", "functools.cache"),
    "lru-cache-imported-bare": ("from functools import lru_cache\n@lru_cache\ndef f(x):\n    return x\n", "lru_cache"),
    "lru-cache-applied-at-module-level": (
        "import functools\ndef _g(x):\n    return x\nf = functools.lru_cache()(_g)\n",
        "lru_cache",
    ),
    "lru-cache-on-a-helper": (
        "import functools\n@functools.cache\ndef _g(n):\n    return n\ndef f(x):\n    return x * _g(3)\n",
        "in _g",
    ),
    "jitted-function-writing": ("import jax\nG = {}\n@jax.jit\ndef f(x):\n    G['t'] = x\n    return x\n", "'G'"),
    "jax-debug-callback": (
        "import jax\nL = []\ndef f(x):\n    jax.debug.callback(lambda v: L.append(v), x)\n    return x\n",
        "L.append",
    ),
    "tree-map-with-a-writing-lambda": (
        "import jax\nL = []\ndef f(t):\n    jax.tree_util.tree_map(lambda v: L.append(v), t)\n    return t\n",
        "L.append",
    ),
    "an-argument-changed-in-place": (
        "def f(params, x):\n    params['W'] = x\n    return params\n",
        "its argument 'params'",
    ),
    "exec": ("def f(x):\n    exec('G = 1')\n    return x\n", "exec"),
    "globals": ("def f(x):\n    globals()['G'] = x\n    return x\n", "globals"),
    "a-dunder-dict": ("class S: pass\ndef f(x):\n    S.__dict__\n    return x\n", "__dict__"),
    "object-setattr-outside-init": (
        "class S:\n    def go(self, x):\n        object.__setattr__(self, 'a', x)\ndef f(x):\n    return x\n",
        "__setattr__",
    ),
    "computed-getattr": (
        "L = []\ndef f(x):\n    getattr(L, 'app' + 'end')(x)\n    return x\n",
        "computed attribute name",
    ),
    "an-import-outside-the-list": ("def f(x):\n    import sys\n    return x\n", "imports sys"),
    "a-module-level-import-outside-the-list": (
        "import sys\ndef f(x):\n    sys.modules['m'].G = x\n    return x\n",
        "sys",
    ),
    "defined-only-by-import": ("from os.path import join as f\n", "is imported"),
    "not-defined": ("def g(x):\n    return x\n", "not defined"),
    "not-python": ("def f(x) return x\n", "cannot be read as Python"),
}

# Honest code that must pass: fresh locals changed, copies changed, methods of libraries that only sound mutating.
HONEST = {
    "fresh-dict": "def f(x):\n    out = {}\n    out['a'] = x\n    return out\n",
    "copy-then-change": "def f(p, x):\n    p = dict(p)\n    p['b'] = x\n    return p\n",
    "copy-method-then-change": "def f(p, x):\n    q = p.copy()\n    q['b'] = x\n    return q\n",
    "list-append": "def f(xs):\n    out = []\n    for x in xs:\n        out.append(x)\n    return out\n",
    "comprehension": "def f(xs):\n    return [x + 1 for x in xs]\n",
    "fresh-set": "def f(xs):\n    seen = set()\n    seen.add(1)\n    return seen\n",
    "kwargs-pop": "def f(x, **kwargs):\n    kwargs.pop('a', None)\n    return x\n",
    "numpy-copy": "import numpy as np\ndef f(x):\n    y = np.array(x)\n    y[0] = 0\n    y.fill(1)\n    return y\n",
    "numpy-module-functions": "import numpy as np\nimport jax.numpy as jnp\ndef f(x):\n    return np.sort(x) + jnp.sort(x)\n",
    "numpy-scalar-types": "import numpy as np\ndef f(x):\n    return np.float_(x) + np.bool_(x) + np.round_(x)\n",
    "jax-at": "def f(x):\n    return x.at[0].add(1).at[1].set(2)\n",
    "optax-update": "def f(state, grads):\n    updates, opt = state.tx.update(grads, state.opt_state, state.params)\n    return updates, opt\n",
    "closure-over-a-fresh-local": "def f(x):\n    leaves = []\n    def g(v):\n        leaves.append(v)\n    g(x)\n    return leaves\n",
    "nonlocal-counter-in-a-call": "def f(xs):\n    n = 0\n    def bump():\n        nonlocal n\n        n += 1\n    for _ in xs:\n        bump()\n    return n\n",
    "augmented-number": "def f(x, n):\n    total = 0\n    for _ in range(n):\n        total += x\n        x += 1\n    return total\n",
    "init-and-setup": (
        "import flax.linen as nn\nclass M(nn.Module):\n    def setup(self):\n        self.dense = nn.Dense(3)\n    def __call__(self, x):\n"
        "        return self.dense(x)\nclass D:\n    def __init__(self, n):\n        self.n = n\n        self._fill()\n    def _fill(self):\n"
        "        self.data = list(range(self.n))\ndef f(x):\n    return M().apply({}, x)\n"
    ),
    "a-flax-variable-of-its-own": (
        "import flax.linen as nn\nimport jax.numpy as jnp\nclass Norm(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n"
        "        mean = self.variable('batch_stats', 'mean', jnp.zeros, x.shape[-1:])\n        mean.value = x.mean(0)\n"
        "        return x - mean.value\ndef f(x):\n    return Norm().init_with_output({}, x)\n"
    ),
    "a-fresh-object-of-a-class": "class S: pass\ndef f(x):\n    s = S()\n    s.a = x\n    return s\n",
    "jitted-by-assignment": "import jax\ndef _g(x):\n    return x + 1\nf = jax.jit(_g)\n",
    "partial-jit": "import functools\nimport jax\n@functools.partial(jax.jit, static_argnums=1)\ndef f(x, n):\n    return x * n\n",
    "reads-module-constants": "import numpy as np\nSIZES = (3, 4)\nTABLE = {'a': 1}\ndef f(x):\n    return x * TABLE['a'] + len(SIZES) + np.pi\n",
    "a-fresh-generator-per-call": "import numpy as np\ndef f(x):\n    rng = np.random.default_rng(0)\n    return x + rng.normal()\n",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_each_route_to_state_that_outlives_the_call_is_flagged(name):
    source, says = HOSTILE[name]
    failure = module_state_failure(source, "m", "f")
    assert failure is not None, f"{name}: not flagged"
    assert says in str(failure), f"{name}: {failure}"
    assert "m.py:" in str(failure) and "hint" not in str(failure)  # file:line, then the advice


def test_the_message_names_the_line_the_function_and_what_to_do():
    failure = module_state_failure(
        "import jax\n\nCACHE = {}\n\n\ndef f(x):\n    CACHE['x'] = x\n    return x\n", "m", "f"
    )
    assert failure is not None
    assert failure.problem == "m.py:7: f changes the contents of the module-level variable 'CACHE' (writes CACHE['x'])"
    assert "keep everything the function needs in its arguments" in str(failure)
    assert "decided from the source of m.py" in str(failure)


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_code_is_not_flagged(name):
    assert writes_of(HONEST[name], "m", "f") == []


def _function_names(source: str) -> set[str]:
    tree = ast.parse(source)
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef)} | {
        t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)
    }


def test_the_references_and_the_stubs_pass_clean():
    course = load_course(ROOT)
    checked = 0
    for module in course.modules:
        for folder in (SOLUTIONS, EXERCISES):
            source = (folder / f"{module.name}.py").read_text(encoding="utf-8")
            for fn in module.functions:
                assert writes_of(source, module.name, fn.name) == [], f"{folder.name}/{module.name}.{fn.name}"
                checked += 1
    assert checked == 2 * sum(len(m.functions) for m in course.modules)


def _gallery_rows(path, prefix: str):
    """The code strings of the top-level assignments of ``path`` whose name starts with ``prefix``, with the
    other strings of their row (its function, its pattern)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if not (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id.startswith(prefix) for t in node.targets)
        ):
            continue
        value = node.value
        rows = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
        rows = [v for row in rows for v in (row.values if isinstance(row, ast.Dict) else [row])]
        for row in rows:
            strings = [n.value for n in ast.walk(row) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
            for text in strings:
                code = textwrap.dedent(text).strip("\n")
                if "\n" in code and ("def " in code or " = " in code):
                    try:
                        ast.parse(code)
                    except SyntaxError:
                        continue
                    yield code, strings


def _gallery_module(path) -> tuple[str, str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = {
        t.id: n.value.value
        for n in tree.body
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    return found["MODULE"], found.get("IMPORTS", "import jax\n")


def test_every_correct_answer_of_the_galleries_passes_clean():
    course = load_course(ROOT)
    answers = 0
    for path in sorted((ROOT / "tests" / "galleries").glob("test_module_*.py")):
        module, imports = _gallery_module(path)
        functions = [fn.name for fn in course.module(module).functions]
        for code, _ in _gallery_rows(path, "CORRECT"):
            source = imports + with_function(module, code)
            for fn in functions:
                assert writes_of(source, module, fn) == [], (
                    f"{path.name}: {fn}: {writes_of(source, module, fn)}\n{code}"
                )
            answers += 1
    assert answers > 60  # the galleries were read


def test_every_wrong_answer_the_runtime_check_catches_writing_module_state_is_flagged():
    flagged = 0
    functions = {fn.name for m in load_course(ROOT).modules for fn in m.functions}
    for path in sorted((ROOT / "tests" / "galleries").glob("test_module_*.py")):
        module, imports = _gallery_module(path)
        for code, strings in _gallery_rows(path, "WRONG"):
            named = [re.search(r"module-level (?:variable |\(variable \)\?)'(\w+)'", s) for s in strings]
            variable = next((m.group(1) for m in named if m), None)
            if variable is None or variable not in code:  # not a module-state row, or its code is built by a call
                continue
            function = next(s for s in strings if s in functions)
            if function not in _function_names(code):
                continue
            assert writes_of(imports + with_function(module, code), module, function), (
                f"{path.name}: {function}\n{code}"
            )
            flagged += 1
    assert flagged >= 8


def test_it_is_the_module_state_analysis_of_the_source_kind():
    assert ANALYSES["module_state"] is module_state_failure
    assert decide_from_source("module_state", "L = []\ndef f(x):\n    L.append(x)\n", "m", "f") is not None
