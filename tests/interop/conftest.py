"""The interop tests use the contract tests' real gateway over the demo."""

from tests.contract.conftest import (  # noqa: F401
    _print_gateway_log_on_failure,
    demo_home,
    gateway,
    pytest_runtest_makereport,
)
