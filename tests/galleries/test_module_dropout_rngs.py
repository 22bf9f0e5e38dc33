"""The dropout_rngs checks judge right: wrong key derivations, retracing loops, randomness at evaluation and
Python loops over samples are rejected with a message naming what was detected, attributed to the right
function; correct answers written differently pass."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from support import SOLUTIONS, assert_accepted, assert_rejected, grade, with_function

from autograder.core.oracle import load_reference

MODULE = "dropout_rngs"
IMPORTS = "import functools\n"

# the reference's loss, for variants that change only the step around it
_LOSS = """
        def _loss(state, params, batch, key):
            x, labels = batch
            logits = state.apply_fn({"params": params}, x, train=True, rngs={"dropout": key}).squeeze(-1)
            return optax.sigmoid_binary_cross_entropy(logits, labels).mean()
"""

CORRECT = [
    (
        "create_train_state_dropout",
        "init-in-train-mode",
        """
        def create_train_state_dropout(rng, model, learning_rate, sample_input):
            params = model.init(rng, sample_input, train=True)["params"]
            return train_state.TrainState.create(apply_fn=model.apply, params=params, tx=optax.sgd(learning_rate))
     """,
    ),
    (
        "create_train_state_dropout",
        "constructor-and-inject-hyperparams",
        """
        def create_train_state_dropout(rng, model, learning_rate, sample_input):
            params = model.init({"params": rng}, sample_input, train=False)["params"]
            tx = optax.inject_hyperparams(optax.sgd)(learning_rate=learning_rate)
            return train_state.TrainState(step=0, apply_fn=model.apply, params=params, tx=tx, opt_state=tx.init(params))
     """,
    ),
    (
        "train_step_dropout",
        "grad-and-manual-optimizer-update",
        _LOSS
        + """
        @jax.jit
        def train_step_dropout(state, batch, dropout_key):
            step_key = jax.random.fold_in(key=dropout_key, data=state.step)
            loss = _loss(state, state.params, batch, step_key)
            grads = jax.grad(lambda p: _loss(state, p, batch, step_key))(state.params)
            updates, opt_state = state.tx.update(grads, state.opt_state, state.params)
            return state.replace(step=state.step + 1, params=optax.apply_updates(state.params, updates), opt_state=opt_state), loss
     """,
    ),
    (
        "train_step_dropout",
        "donates-the-state",
        _LOSS
        + """
        @functools.partial(jax.jit, donate_argnums=0)
        def train_step_dropout(state, batch, dropout_key):
            loss, grads = jax.value_and_grad(_loss, argnums=1)(state, state.params, batch, jax.random.fold_in(dropout_key, state.step))
            return state.apply_gradients(grads=grads), loss
     """,
    ),
    (
        "eval_step_dropout",
        "sigmoid-threshold-positional-train",
        """
        @jax.jit
        def eval_step_dropout(state, batch):
            x, labels = batch
            probs = jax.nn.sigmoid(state.apply_fn({"params": state.params}, x, False)[:, 0])
            return jnp.mean((probs > 0.5) == (labels == 1))
     """,
    ),
    (
        "mc_dropout_predict",
        "lax-map",
        """
        def mc_dropout_predict(state, x, key, n_samples):
            def sample(k):
                return jax.nn.sigmoid(state.apply_fn({"params": state.params}, x, train=True, rngs={"dropout": k})[:, 0])
            return jax.lax.map(sample, jax.random.split(key, n_samples)).mean(axis=0)
     """,
    ),
    (
        "mc_dropout_predict",
        "reshape-to-the-batch-size",
        """
        def mc_dropout_predict(state, x, key, n_samples):
            def sample(k):
                logits = state.apply_fn({"params": state.params}, x, train=True, rngs={"dropout": k})
                return jax.nn.sigmoid(logits.reshape(x.shape[0]))
            return jax.vmap(sample)(jax.random.split(key, n_samples)).sum(axis=0) / n_samples
     """,
    ),
    (
        "mc_dropout_predict",
        "vmap-of-fold-in-keys",
        """
        def mc_dropout_predict(state, x, key, n_samples):
            def sample(i):
                k = jax.random.fold_in(key, i)
                return jax.nn.sigmoid(state.apply_fn({"params": state.params}, x, train=True, rngs={"dropout": k}).squeeze(-1))
            return jnp.mean(jax.vmap(sample)(jnp.arange(n_samples)), axis=0)
     """,
    ),
]


@pytest.mark.parametrize(
    "function, replacement", [(c[0], c[2]) for c in CORRECT], ids=[f"{c[0]}-{c[1]}" for c in CORRECT]
)
def test_correct_variant_written_differently_passes(pytester, function, replacement):
    result = grade(pytester, MODULE, IMPORTS + with_function(MODULE, replacement), only=function)[function]
    assert_accepted(result)


def step_with_key(key_expression, jit="@jax.jit"):
    """A train_step_dropout that is the reference's but for the dropout key it uses."""
    return (
        _LOSS
        + f"""
        {jit}
        def train_step_dropout(state, batch, dropout_key):
            loss, grads = jax.value_and_grad(_loss, argnums=1)(state, state.params, batch, {key_expression})
            return state.apply_gradients(grads=grads), loss
    """
    )


TRAIN_VALUES = "train_step_dropout_matches"
WRONG = [
    # (function, id, replacement, regex the message must match, -k expression or None for all the function's checks)
    (
        "create_train_state_dropout",
        "keeps-the-whole-variables-dict",
        """
        def create_train_state_dropout(rng, model, learning_rate, sample_input):
            variables = model.init(rng, sample_input, train=False)
            return train_state.TrainState.create(apply_fn=model.apply, params=variables, tx=optax.sgd(learning_rate))
     """,
        r"state.params is \{'params': .*(.*\n)*.*keep variables\['params'\] only",
        "holds_only",
    ),
    (
        "create_train_state_dropout",
        "adam",
        """
        def create_train_state_dropout(rng, model, learning_rate, sample_input):
            params = model.init(rng, sample_input, train=False)["params"]
            return train_state.TrainState.create(apply_fn=model.apply, params=params, tx=optax.adam(learning_rate))
     """,
        r"after 1 optimizer step\(s\) with the same gradients: state.params.* differs",
        "optimizer",
    ),
    (
        "create_train_state_dropout",
        "splits-the-init-key",
        """
        def create_train_state_dropout(rng, model, learning_rate, sample_input):
            rng, init_rng = jax.random.split(rng)
            params = model.init(init_rng, sample_input, train=False)["params"]
            return train_state.TrainState.create(apply_fn=model.apply, params=params, tx=optax.sgd(learning_rate))
     """,
        r"state.params\['Dense_0'\]\['kernel'\] differs from the reference",
        "params_match",
    ),
    (
        "train_step_dropout",
        "dropout-key-used-directly",
        step_with_key("dropout_key"),
        r"the step used dropout_key itself(.*\n)*.*fold_in\(dropout_key, state.step\)",
        TRAIN_VALUES,
    ),
    (
        "train_step_dropout",
        "splits-the-dropout-key",
        step_with_key("jax.random.split(dropout_key)[1]"),
        r"the step used jax.random.split\(dropout_key\)\[1\]",
        TRAIN_VALUES,
    ),
    (
        "train_step_dropout",
        "split-consumes-the-callers-key",
        step_with_key("jax.random.split(dropout_key)[1]"),
        r"at step 2 of a loop that gives the same dropout_key to every step, JAX reports that the key was already used",
        "consuming",
    ),
    (
        "train_step_dropout",
        "fixed-key",
        step_with_key("jax.random.key(0)"),
        r"the step used a fixed key of your own",
        TRAIN_VALUES,
    ),
    (
        "train_step_dropout",
        "same-mask-at-every-step",
        step_with_key("jax.random.fold_in(dropout_key, 0)"),
        r"the steps numbered \d+ and \d+ gave the same loss: the dropout mask does not depend on state.step",
        "new_mask",
    ),
    (
        "train_step_dropout",
        "int-step-as-static-argument",
        _LOSS
        + """
        @functools.partial(jax.jit, static_argnums=3)
        def _step(state, batch, dropout_key, step):
            loss, grads = jax.value_and_grad(_loss, argnums=1)(state, state.params, batch, jax.random.fold_in(dropout_key, step))
            return state.apply_gradients(grads=grads), loss

        def train_step_dropout(state, batch, dropout_key):
            return _step(state, batch, dropout_key, int(state.step))
     """,
        r"train_step_dropout traced again at call\(s\) 4, 5, 6, 7(.*\n)*.*JAX explains the cache miss",
        "does_not_retrace",
    ),
    (
        "train_step_dropout",
        "new-optimizer-in-the-returned-state",
        _LOSS
        + """
        @jax.jit
        def train_step_dropout(state, batch, dropout_key):
            loss, grads = jax.value_and_grad(_loss, argnums=1)(state, state.params, batch, jax.random.fold_in(dropout_key, state.step))
            return state.apply_gradients(grads=grads).replace(tx=optax.sgd(0.3)), loss
     """,
        r"train_step_dropout traced again at call\(s\) 4, 5, 6, 7",
        "does_not_retrace",
    ),
    (
        "train_step_dropout",
        "dropout-off-while-training",
        """
        @jax.jit
        def train_step_dropout(state, batch, dropout_key):
            x, labels = batch
            def loss_fn(params):
                logits = state.apply_fn({"params": params}, x, train=False).squeeze(-1)
                return optax.sigmoid_binary_cross_entropy(logits, labels).mean()
            loss, grads = jax.value_and_grad(loss_fn)(state.params)
            return state.apply_gradients(grads=grads), loss
     """,
        r"loss differs from the reference",
        TRAIN_VALUES,
    ),
    (
        "train_step_dropout",
        "gradient-of-state-params",
        _LOSS
        + """
        @jax.jit
        def train_step_dropout(state, batch, dropout_key):
            key = jax.random.fold_in(dropout_key, state.step)
            loss, grads = jax.value_and_grad(lambda p: _loss(state, state.params, batch, key))(state.params)
            return state.apply_gradients(grads=grads), loss
     """,
        r"new_state.params\[.*did not change at all(.*\n)*.*gradients were all zero",
        "gradients",
    ),
    (
        "train_step_dropout",
        "module-level-model",
        """
        MODEL = DropoutClassifier(16, 1, rate=0.1)

        @jax.jit
        def train_step_dropout(state, batch, dropout_key):
            x, labels = batch
            def loss_fn(params):
                logits = MODEL.apply({"params": params}, x, train=True, rngs={"dropout": jax.random.fold_in(dropout_key, state.step)})
                return optax.sigmoid_binary_cross_entropy(logits.squeeze(-1), labels).mean()
            loss, grads = jax.value_and_grad(loss_fn)(state.params)
            return state.apply_gradients(grads=grads), loss
     """,
        r"(?i)shape",
        TRAIN_VALUES,
    ),
    (
        "eval_step_dropout",
        "dropout-on-with-a-fixed-key",
        """
        @jax.jit
        def eval_step_dropout(state, batch):
            x, labels = batch
            logits = state.apply_fn({"params": state.params}, x, train=True, rngs={"dropout": jax.random.key(0)}).squeeze(-1)
            return ((logits > 0) == labels).mean()
     """,
        r"rate=0.9\).*accuracy differs from the reference(.*\n)*.*train=False",
        "rate_0_9",
    ),
    (
        "eval_step_dropout",
        "takes-a-key",
        """
        @jax.jit
        def eval_step_dropout(state, batch, key=None):
            x, labels = batch
            logits = state.apply_fn({"params": state.params}, x, train=False).squeeze(-1)
            return ((logits > 0) == labels).mean()
     """,
        r"eval_step_dropout takes \(state, batch, key\)",
        None,
    ),
    (
        "eval_step_dropout",
        "not-jitted",
        """
        def eval_step_dropout(state, batch):
            x, labels = batch
            logits = state.apply_fn({"params": state.params}, x, train=False).squeeze(-1)
            return ((logits > 0) == labels).mean()
     """,
        r"eval_step_dropout is not a jax.jit function",
        "eval_step_dropout_is_jitted",
    ),
    (
        "eval_step_dropout",
        "no-squeeze",
        """
        @jax.jit
        def eval_step_dropout(state, batch):
            x, labels = batch
            logits = state.apply_fn({"params": state.params}, x, train=False)
            return ((logits > 0) == labels).mean()
     """,
        r"accuracy differs from the reference",
        "eval_step_dropout_matches",
    ),
    (
        "mc_dropout_predict",
        "python-loop",
        """
        def mc_dropout_predict(state, x, key, n_samples):
            keys = jax.random.split(key, n_samples)
            probs = [jax.nn.sigmoid(state.apply_fn({"params": state.params}, x, train=True, rngs={"dropout": keys[i]}).squeeze(-1))
                     for i in range(n_samples)]
            return sum(probs) / n_samples
     """,
        r"the compiled program of mc_dropout_predict grows with the size of n_samples \(4: \d+ operations, 16: \d+ operations\)(.*\n)*.*jax.vmap over the array of keys",
        "python_loop",
    ),
    # a Python loop over the samples inside a jax.lax.fori_loop's body is still one body: only a loop unrolled
    # by Python grows the program, whatever builds it (here: a list of jitted calls stacked)
    (
        "mc_dropout_predict",
        "python-loop-of-jitted-samples",
        """
        @functools.partial(jax.jit, static_argnums=0)
        def _sample(apply_fn, params, x, k):
            return jax.nn.sigmoid(apply_fn({"params": params}, x, train=True, rngs={"dropout": k}).squeeze(-1))

        def mc_dropout_predict(state, x, key, n_samples):
            keys = jax.random.split(key, n_samples)
            return jnp.stack([_sample(state.apply_fn, state.params, x, keys[i]) for i in range(n_samples)]).mean(axis=0)
     """,
        r"the compiled program of mc_dropout_predict grows with the size of n_samples",
        "python_loop",
    ),
    # rescales the state's weights in place (the keep rate applied to the caller's params)
    (
        "mc_dropout_predict",
        "rescales-the-params-in-place",
        """
        def mc_dropout_predict(state, x, key, n_samples):
            state.params.update(jax.tree.map(lambda p: p * 0.6, state.params))
            def sample(k):
                return jax.nn.sigmoid(state.apply_fn({"params": state.params}, x, train=True, rngs={"dropout": k}).squeeze(-1))
            return jnp.mean(jax.vmap(sample)(jax.random.split(key, n_samples)), axis=0)
     """,
        r"mc_dropout_predict (replaced|modified) state.params",
        "leaves_the_state_unchanged",
    ),
    # not jitted, a key drawn from NumPy's global generator: its result changes when NumPy is re-seeded
    (
        "train_step_dropout",
        "key-from-numpy",
        "\n        import numpy as np\n" + step_with_key("jax.random.PRNGKey(np.random.randint(1 << 30))", jit=""),
        r"the result of train_step_dropout changed when only NumPy's global RNG \(np.random\) was re-seeded",
        "train_step_dropout_is_pure",
    ),
    # a Python wrapper around a jitted step: the function itself has no program of its own
    (
        "train_step_dropout",
        "wrapper-around-a-jitted-step",
        step_with_key("jax.random.fold_in(dropout_key, state.step)").replace("def train_step_dropout(", "def _step(")
        + """
        def train_step_dropout(state, batch, dropout_key):
            return _step(state, batch, dropout_key)
    """,
        r"train_step_dropout is not a jax.jit function",
        "train_step_dropout_is_jitted",
    ),
    (
        "mc_dropout_predict",
        "same-key-for-every-sample",
        """
        def mc_dropout_predict(state, x, key, n_samples):
            def sample(_):
                return jax.nn.sigmoid(state.apply_fn({"params": state.params}, x, train=True, rngs={"dropout": key}).squeeze(-1))
            return jnp.mean(jax.vmap(sample)(jnp.arange(n_samples)), axis=0)
     """,
        r"mean probability differs from the reference",
        "mc_dropout_predict_matches",
    ),
    (
        "mc_dropout_predict",
        "sequential-splits",
        """
        def mc_dropout_predict(state, x, key, n_samples):
            def sample(key, _):
                key, sub = jax.random.split(key)
                logits = state.apply_fn({"params": state.params}, x, train=True, rngs={"dropout": sub}).squeeze(-1)
                return key, jax.nn.sigmoid(logits)
            _, probs = jax.lax.scan(sample, key, None, length=n_samples)
            return probs.mean(axis=0)
     """,
        r"mean probability differs from the reference",
        "mc_dropout_predict_matches",
    ),
    (
        "mc_dropout_predict",
        "sigmoid-of-the-mean-logit",
        """
        def mc_dropout_predict(state, x, key, n_samples):
            logits = jax.vmap(lambda k: state.apply_fn({"params": state.params}, x, train=True, rngs={"dropout": k}).squeeze(-1))(
                jax.random.split(key, n_samples))
            return jax.nn.sigmoid(logits.mean(axis=0))
     """,
        r"mean probability differs from the reference",
        "mc_dropout_predict_matches",
    ),
    (
        "mc_dropout_predict",
        "squeeze-without-axis",
        """
        def mc_dropout_predict(state, x, key, n_samples):
            def sample(k):
                return jax.nn.sigmoid(state.apply_fn({"params": state.params}, x, train=True, rngs={"dropout": k}).squeeze())
            return jnp.mean(jax.vmap(sample)(jax.random.split(key, n_samples)), axis=0)
     """,
        r"for x of 1 row\(s\)(.*\n)*|has shape \(\), expected \(1,\)",
        "mc_dropout_predict_matches",
    ),
    (
        "mc_dropout_predict",
        "squeeze-of-the-stacked-samples",
        """
        def mc_dropout_predict(state, x, key, n_samples):
            def sample(k):
                return jax.nn.sigmoid(state.apply_fn({"params": state.params}, x, train=True, rngs={"dropout": k}))
            return jnp.mean(jnp.squeeze(jax.vmap(sample)(jax.random.split(key, n_samples))), axis=0)
     """,
        r"mean probability.*(shape|structure)",
        "mc_dropout_predict_matches",
    ),
    (
        "mc_dropout_predict",
        "dropout-off",
        """
        def mc_dropout_predict(state, x, key, n_samples):
            return jax.nn.sigmoid(state.apply_fn({"params": state.params}, x, train=False).squeeze(-1))
     """,
        r"returned the same result for two different keys",
        "depends_only_on_the_key",
    ),
    (
        "mc_dropout_predict",
        "same-key-for-every-sample-in-the-program",
        """
        def mc_dropout_predict(state, x, key, n_samples):
            def sample(_):
                return jax.nn.sigmoid(state.apply_fn({"params": state.params}, x, train=True, rngs={"dropout": key}).squeeze(-1))
            return jnp.mean(jax.vmap(sample)(jnp.arange(n_samples)), axis=0)
     """,
        r"(?s)the compiled program of mc_dropout_predict .*checked: mc_dropout_predict uses every PRNG key at most once",
        "uses_each_key_once",
    ),
]


@pytest.mark.parametrize(
    "function, replacement, pattern, only",
    [(w[0], w[2], w[3], w[4]) for w in WRONG],
    ids=[f"{w[0]}-{w[1]}" for w in WRONG],
)
def test_wrong_implementation_fails_with_the_right_message(pytester, function, replacement, pattern, only):
    results = grade(pytester, MODULE, IMPORTS + with_function(MODULE, replacement), only=only or function)
    assert_rejected(results[function], pattern)


@pytest.fixture(scope="module")
def reference_module():
    """The reference file itself, by its path: an ``import dropout_rngs`` would find whatever module of that name
    an earlier in-process run left in ``sys.modules`` (a gallery variant)."""
    return load_reference(SOLUTIONS, "dropout_rngs")


def test_the_reference_mc_dropout_equals_the_loop_over_split_keys(reference_module):
    """vmap over the keys gives exactly the per-key masks: the contract's loop, written out."""
    ref = reference_module
    state = ref.create_train_state_dropout(
        jax.random.key(0), ref.DropoutClassifier(7, 1, rate=0.4), 0.1, np.zeros((4, 2), np.float32)
    )
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(6, 2)
    for key in (jax.random.key(5), jax.random.PRNGKey(5)):
        keys = jax.random.split(key, 4)
        loop = [
            jax.nn.sigmoid(state.apply_fn({"params": state.params}, x, train=True, rngs={"dropout": k}).squeeze(-1))
            for k in keys
        ]
        np.testing.assert_allclose(
            ref.mc_dropout_predict(state, x, key, 4), jnp.mean(jnp.stack(loop), axis=0), rtol=1e-6
        )
