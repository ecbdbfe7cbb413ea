""" "Did you mean ...?" for a mistyped name: the workflow loaders' helper, for the CLI and the
mocks too (one implementation, in ``sand_workflows.suggest``)."""

from sand_workflows.suggest import closest, did_you_mean

__all__ = ["closest", "did_you_mean"]
