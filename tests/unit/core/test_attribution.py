"""A check belongs to the one function its name starts with (``test_<function>_``); anything else is an error."""

from pathlib import Path

import pytest

from autograder.core.attribution import AttributionError, attribute
from autograder.core.course import parse_course


def course(*functions: str):
    data = {
        "format": 1,
        "title": "T",
        "welcome": "w",
        "modules": [
            {"name": "m", "topic": "t", "functions": [{"name": f, "points": 1, "hint": "h"} for f in functions]}
        ],
    }
    return parse_course(data, Path("/nowhere"))


@pytest.mark.parametrize(
    "test_name, function",
    [
        ("test_train_step_matches_reference", "train_step"),
        ("test_eval_step_matches_train_step_accuracy", "eval_step"),  # names train_step later: still eval_step
        ("test_train_step", "train_step"),
        ("test_train_model_is_pure", "train_model"),
    ],
)
def test_the_function_named_right_after_test_owns_the_check(test_name, function):
    assert attribute(test_name, "m", course("train_step", "eval_step", "train_model")).name == function


def test_a_check_naming_no_function_is_an_error_with_a_fix():
    with pytest.raises(AttributionError, match=r"names none of the functions.*fix: rename it test_<function>_"):
        attribute("test_accuracy_of_eval_step", "m", course("train_step", "eval_step"))


def test_a_check_that_could_name_two_functions_is_an_error_with_a_fix():
    with pytest.raises(AttributionError, match=r"could judge train_step or train_step_bn; fix:"):
        attribute("test_train_step_bn_is_pure", "m", course("train_step", "train_step_bn"))


def test_a_name_that_only_contains_a_function_name_does_not_count():
    with pytest.raises(AttributionError):
        attribute("test_trainstep", "m", course("train_step"))
    with pytest.raises(AttributionError):
        attribute("test_my_dropout_is_pure", "m", course("dropout"))
