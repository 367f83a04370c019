"""A run passes each kernel the arguments it takes: the fast path for plain functions
(their code object) agrees with the signature-based path for every kind of parameter."""
import functools

import pytest

from ptopipe.errors import ConfigError
from ptopipe.isa.launch import _select_by_signature, _select_kwargs


def plain(a, b):
    pass


def with_default(a, c=3):
    pass


def var_keyword(a, **kw):
    pass


def var_positional(a, *rest):
    pass


def keyword_only(a, *, b):
    pass


def positional_only(a, /, b):
    pass


def needs_missing(a, z):
    pass


@functools.wraps(plain)
def wrapped(*args, **kwargs):
    return plain(*args, **kwargs)


class CallableKernel:
    def __call__(self, b):
        pass


def with_attribute(a):
    pass


with_attribute.note = "a user's attribute"

ARGS = {"a": 1, "b": 2, "c": 4}
KERNELS = [plain, with_default, var_keyword, var_positional, keyword_only, positional_only, needs_missing,
           wrapped, CallableKernel(), functools.partial(plain, b=9), with_attribute, lambda b, a: None]


@pytest.mark.parametrize("fn", KERNELS, ids=lambda f: getattr(f, "__name__", type(f).__name__))
@pytest.mark.parametrize("args", [ARGS, {"a": 1}, {}], ids=["all", "a", "none"])
def test_the_fast_path_selects_what_the_signature_does(fn, args):
    try:
        want = _select_by_signature(fn, args)
    except ConfigError as e:
        with pytest.raises(ConfigError) as ei:
            _select_kwargs(fn, args)
        assert ei.value.what == e.what
        return
    got = _select_kwargs(fn, args)
    assert got == want and list(got) == list(want)


def test_a_decorated_kernel_gets_the_arguments_of_the_function_it_wraps():
    assert _select_kwargs(wrapped, ARGS) == {"a": 1, "b": 2}


@pytest.mark.parametrize("fn,name", [(CallableKernel(), "CallableKernel"),
                                     (functools.partial(needs_missing, 1), "needs_missing")])
def test_a_missing_argument_of_a_callable_object_or_partial_is_named(fn, name):
    with pytest.raises(ConfigError) as ei:
        _select_kwargs(fn, {})
    assert ei.value.what.startswith(f"kernel {name} needs argument ")
    assert ei.value.where.startswith(__file__ + ":")


def test_a_missing_argument_of_a_scenario_kernel_says_to_return_it_from_make_args():
    """On the command line the arguments are what the kernel file's make_args returns: the fix
    names it, not only run()'s args=."""
    import numpy as np
    from ptopipe import Scenario

    def vec(a, out):
        pass

    sc = Scenario("sc", None, vec, lambda rng: {"a": np.zeros(4, np.float32)}, lambda args: {})
    with pytest.raises(ConfigError) as ei:
        sc.run()
    assert ei.value.what.startswith("kernel vec needs argument 'out' but args has a")
    assert "to the dict its make_args returns" in ei.value.fix


def test_a_list_given_for_a_gm_tensor_is_an_error_at_its_load_saying_to_pass_an_array():
    """Only numpy arrays are laid out in GM: a nested list reaches the kernel unchanged, and its
    TLOAD says so, at the kernel's line, with the fix."""
    import numpy as np
    import ptopipe
    from ptopipe.errors import KernelError
    from ptopipe.isa import TLOAD, Tile, TileType, float32

    def vec(a):
        t = Tile(TileType.Vec, float32, 2, 8, addr=0)
        TLOAD(t, a)

    with pytest.raises(KernelError) as e:
        ptopipe.run(None, (vec, None), dict(a=[[1.0] * 8] * 2))
    assert e.value.where.endswith(f":{vec.__code__.co_firstlineno + 2}")
    assert "TLOAD source must be a GlobalTensor, got list" in e.value.what
    assert "np.asarray" in e.value.fix
