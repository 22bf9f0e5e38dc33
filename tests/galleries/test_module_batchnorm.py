"""The batchnorm checks judge right: steps that lose, freeze or misplace batch_stats, evaluate in the wrong
mode, retrace or write into their input fail with the right message; correct answers written differently pass."""

import pytest
from support import assert_accepted, assert_rejected, gallery, grade, with_function

MODULE = "batchnorm"
IMPORTS = "import functools\nimport jax.numpy as jnp\n"


CORRECT_VARIANTS = {
    "create_train_state_bn": [
        (
            "direct-constructor-with-chained-scale",
            """
        def create_train_state_bn(rng, model, learning_rate, sample_input):
            variables = model.init(rng, sample_input, train=False)
            tx = optax.chain(optax.scale(-learning_rate))
            params = variables["params"]
            return TrainStateBN(step=0, apply_fn=model.apply, params=params, tx=tx,
                                opt_state=tx.init(params), batch_stats=variables["batch_stats"])
        """,
        ),
    ],
    "train_step_bn": [
        # manual optimizer update, state.replace, donation
        (
            "manual-update-with-donation",
            """
        @functools.partial(jax.jit, donate_argnums=(0,))
        def train_step_bn(state, batch):
            x, labels = batch

            def loss_fn(params):
                logits, mutated = state.apply_fn(
                    {"params": params, "batch_stats": state.batch_stats}, x, train=True, mutable="batch_stats"
                )
                return optax.sigmoid_binary_cross_entropy(logits[:, 0], labels).mean(), mutated["batch_stats"]

            grads, batch_stats = jax.grad(lambda p: loss_fn(p), has_aux=True)(state.params)
            loss, _ = loss_fn(state.params)
            updates, opt_state = state.tx.update(grads, state.opt_state, state.params)
            new_state = state.replace(
                step=state.step + 1, params=optax.apply_updates(state.params, updates),
                opt_state=opt_state, batch_stats=batch_stats,
            )
            return new_state, loss
        """,
        ),
        # jit by assignment, apply_gradients then replace
        (
            "jit-by-assignment",
            """
        def _train_step_bn(state, batch):
            x, labels = batch

            def loss_fn(params):
                logits, updates = state.apply_fn(
                    {"params": params, "batch_stats": state.batch_stats}, x, train=True, mutable=["batch_stats"]
                )
                y = labels.astype(jnp.float32)
                z = logits.squeeze(-1)
                return jnp.mean(jax.nn.softplus(z) - y * z), updates

            (loss, updates), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
            return state.apply_gradients(grads=grads).replace(batch_stats=updates["batch_stats"]), loss

        train_step_bn = jax.jit(_train_step_bn)
        """,
        ),
    ],
    "eval_step_bn": [
        (
            "threshold-on-probabilities",
            """
        @jax.jit
        def eval_step_bn(state, batch):
            variables = {"params": state.params, "batch_stats": state.batch_stats}
            probs = jax.nn.sigmoid(state.apply_fn(variables, batch[0], train=False)[:, 0])
            return jnp.mean((probs > 0.5) == (batch[1] > 0))
        """,
        ),
    ],
}

CORRECT = [(what, fn, src) for fn, sources in CORRECT_VARIANTS.items() for what, src in sources]

# Demo objects kept at module level, never changed by a function (issue 10).
DEMO_OBJECTS = """
model = BNClassifier(num_hidden=8, num_outputs=1)
optimizer = optax.sgd(0.1)
demo_state = create_train_state_bn(jax.random.PRNGKey(0), model, 0.1, jnp.ones((8, 2)))
demo_logits = jax.jit(lambda state, x: state.apply_fn({"params": state.params, "batch_stats": state.batch_stats}, x,
                                                      train=False))
"""


def test_demo_objects_at_module_level_keep_every_function_pure(pytester):
    results = grade(
        pytester, MODULE, IMPORTS + with_function(MODULE, "") + DEMO_OBJECTS, only="is_pure or keeps_no_module_state"
    )
    assert set(results) == {"create_train_state_bn", "train_step_bn", "eval_step_bn"}
    for result in results.values():
        assert_accepted(result)


@pytest.mark.parametrize("function, replacement", gallery(CORRECT))
def test_correct_variant_written_differently_passes(pytester, function, replacement):
    source = IMPORTS + with_function(MODULE, replacement)
    result = grade(pytester, MODULE, source, only=function)[function]
    assert_accepted(result)


def step_bn(
    variables="{'params': params, 'batch_stats': state.batch_stats}",
    mode="train=True, mutable=['batch_stats']",
    keep="updates['batch_stats']",
):
    """The reference's train_step_bn with one part changed."""
    return f"""
        @jax.jit
        def train_step_bn(state, batch):
            x, labels = batch

            def loss_fn(params):
                logits, updates = state.apply_fn({variables}, x, {mode})
                loss = optax.sigmoid_binary_cross_entropy(logits.squeeze(-1), labels).mean()
                return loss, updates

            (loss, updates), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
            return state.apply_gradients(grads=grads, batch_stats={keep}), loss
    """


# a function that retraces on every call is slow to grade: only its retrace check runs
RETRACE_CHECKS = "train_step_bn_does_not_retrace"
IN_A_LOOP = (
    r"train_step_bn traced \d+ and compiled \d+ more time\(s\) in a loop of \d+ chained steps(.*\n)*"
    r".*what changed between steps: "
)
OWN_MODEL = r"given a state of BNClassifier\(7, 1\), {function} ran another model(.*\n)*.*state.apply_fn"

WRONG = [
    # (function, replacement, regex the message must match)
    (
        "batch-stats-none",
        "create_train_state_bn",
        """
        def create_train_state_bn(rng, model, learning_rate, sample_input):
            variables = model.init(rng, sample_input, train=False)
            return TrainStateBN.create(apply_fn=model.apply, params=variables["params"], batch_stats=None,
                                       tx=optax.sgd(learning_rate))
     """,
        r"state.batch_stats does not have the structure of the reference's",
    ),
    (
        "sgd-with-momentum",
        "create_train_state_bn",
        """
        def create_train_state_bn(rng, model, learning_rate, sample_input):
            variables = model.init(rng, sample_input, train=False)
            return TrainStateBN.create(apply_fn=model.apply, params=variables["params"],
                                       batch_stats=variables["batch_stats"], tx=optax.sgd(learning_rate, momentum=0.9))
     """,
        r"after 2 optimizer step\(s\)",
    ),
    # batch_stats dropped from the variables: Flax re-initialises them on every step
    (
        "forgets-batch-stats",
        "train_step_bn",
        step_bn(variables="{'params': params}"),
        r"new_state.batch_stats\['BatchNorm_0'\]\['(mean|var)'\] differs from the reference(.*\n)*.*0.9 \* state.batch_stats",
    ),
    # a training step in evaluation mode: running averages never move
    (
        "runs-in-eval-mode",
        "train_step_bn",
        step_bn(mode="train=False, mutable=['batch_stats']"),
        r"new_state.batch_stats\['BatchNorm_0'\]\['(mean|var)'\] did not change at all(.*\n)*.*train=True",
    ),
    # the whole dict apply returned, stored as the batch_stats
    (
        "keeps-the-whole-updates-dict",
        "train_step_bn",
        step_bn(keep="updates"),
        r"new_state.batch_stats holds the whole dict apply returned",
    ),
    # new statistics computed but not kept
    (
        "keeps-the-old-batch-stats",
        "train_step_bn",
        step_bn(keep="state.batch_stats"),
        r"new_state.batch_stats\['BatchNorm_0'\]\['(mean|var)'\] did not change at all",
    ),
    # the loss reads state.params: zero gradients
    (
        "differentiates-state-params",
        "train_step_bn",
        step_bn(variables="{'params': state.params, 'batch_stats': state.batch_stats}"),
        r"new_state.params\[.*did not change at all(.*\n)*.*gradients were all zero",
    ),
    (
        "not-jitted",
        "train_step_bn",
        step_bn().replace("        @jax.jit\n", ""),
        r"train_step_bn is not a jax.jit function",
    ),
    # retracing: a jitted closure per call
    (
        "retraces-every-call",
        "train_step_bn",
        """
        def train_step_bn(state, batch):
            @jax.jit
            def step(params):
                x, labels = batch
                def loss_fn(params):
                    logits, updates = state.apply_fn({'params': params, 'batch_stats': state.batch_stats}, x,
                                                     train=True, mutable=['batch_stats'])
                    return optax.sigmoid_binary_cross_entropy(logits.squeeze(-1), labels).mean(), updates
                return jax.value_and_grad(loss_fn, has_aux=True)(params)
            (loss, updates), grads = step(state.params)
            return state.apply_gradients(grads=grads, batch_stats=updates['batch_stats']), loss
     """,
        r"train_step_bn traced \d+ and compiled \d+ more time\(s\)",
        RETRACE_CHECKS,
    ),
    # retracing in a loop (issue 10): a new apply_fn, a new optimizer in every returned state
    (
        "new-apply-fn-each-step",
        "train_step_bn",
        step_bn(keep="updates['batch_stats'], apply_fn=functools.partial(state.apply_fn)"),
        IN_A_LOOP + r"state.apply_fn is a static field",
        RETRACE_CHECKS,
    ),
    (
        "new-optimizer-each-step",
        "train_step_bn",
        step_bn(keep="updates['batch_stats'], tx=optax.sgd(0.3)"),
        IN_A_LOOP + r"state.tx is a static field",
        RETRACE_CHECKS,
    ),
    # a module-level model of the scenario's size instead of the state's (issue 10)
    (
        "module-level-model",
        "train_step_bn",
        step_bn().replace("state.apply_fn(", "MODEL.apply(") + "\n        MODEL = BNClassifier(6, 1)\n",
        OWN_MODEL.format(function="train_step_bn"),
        "train_step_bn_matches",
    ),
    (
        "module-level-model",
        "eval_step_bn",
        """
        model = BNClassifier(num_hidden=6, num_outputs=1)

        @jax.jit
        def eval_step_bn(state, batch):
            x, labels = batch
            logits = model.apply({'params': state.params, 'batch_stats': state.batch_stats}, x, train=False)
            return ((logits.squeeze(-1) > 0) == labels).mean()
     """,
        OWN_MODEL.format(function="eval_step_bn"),
        "eval_step_bn_matches",
    ),
    # impure: keeps the latest statistics in a module-level dict
    (
        "stores-updates-in-a-module-dict",
        "train_step_bn",
        step_bn().replace(
            "            return state.apply_gradients",
            "            LATEST['stats'] = updates\n            return state.apply_gradients",
        )
        + "\n        LATEST = {}\n",
        r"module-level (variable )?'LATEST'|leaked a tracer",
    ),
    # evaluation in training mode: batch statistics instead of the running averages
    (
        "evaluates-in-train-mode",
        "eval_step_bn",
        """
        @jax.jit
        def eval_step_bn(state, batch):
            x, labels = batch
            logits, _ = state.apply_fn({'params': state.params, 'batch_stats': state.batch_stats}, x,
                                       train=True, mutable=['batch_stats'])
            return ((logits.squeeze(-1) > 0) == labels).mean()
     """,
        r"accuracy differs from the reference",
    ),
    # logits >= 0 for logits > 0: a logit of exactly 0 (zero output layer) counted as class 1
    (
        "logit-of-zero-is-class-1",
        "eval_step_bn",
        """
        @jax.jit
        def eval_step_bn(state, batch):
            x, labels = batch
            logits = state.apply_fn({'params': state.params, 'batch_stats': state.batch_stats}, x, train=False)
            return ((logits.squeeze(-1) >= 0) == labels).mean()
     """,
        r"(?s)kernel and bias zero.*accuracy differs from the reference.*a logit of exactly 0 is class 0",
        "eval_step_bn_counts",
    ),
    # evaluation that also returns the updated state
    (
        "also-returns-the-state",
        "eval_step_bn",
        """
        @jax.jit
        def eval_step_bn(state, batch):
            x, labels = batch
            logits = state.apply_fn({'params': state.params, 'batch_stats': state.batch_stats}, x, train=False)
            return ((logits.squeeze(-1) > 0) == labels).mean(), state
     """,
        r"accuracy does not have the structure of the reference's",
    ),
]


@pytest.mark.parametrize("function, replacement, pattern, only", gallery(WRONG, width=4))
def test_wrong_implementation_fails_with_the_right_message(pytester, function, replacement, pattern, only):
    results = grade(pytester, MODULE, IMPORTS + with_function(MODULE, replacement), only=only or function)
    assert_rejected(results[function], pattern)
