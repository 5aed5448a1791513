"""What to tell someone whose store holds vectors of another embedding model.

A store records the model id its vectors come from (``all-mpnet-base-v2-int8``); a
process configured with another model (``BLI_MEMORY_EMBEDDER``, default the shipped
``all-MiniLM-L6-v2-int8``) refuses to search or save there. The usual cause is a shell
that lacks the ``BLI_MEMORY_EMBEDDER`` the store was moved with, and there running
``memory reembed`` would move the store back. So the advice names both ways: set the
variable to the store's model to use the store as it is, or re-embed it to move it to
the configured model.
"""

from __future__ import annotations

__all__ = ["embedder_setting", "install_advice", "mismatch_advice", "team_mismatch_advice"]


def embedder_setting(model_id: str) -> str | None:
    """The ``BLI_MEMORY_EMBEDDER`` value that selects the model a store records, if known.

    The shipped model is named by its id (:data:`~bli_memory.core.memory.embeddings.MODEL_NAME`);
    an installable model's id maps to its short name (``all-mpnet-base-v2-int8`` ->
    ``mpnet``, :data:`~bli_memory.core.memory.embedder_models.INSTALLABLE`). Any other id
    (a model folder given by path, a plugin's embedder) returns None: the id alone may not
    be a value the setting takes.
    """
    from bli_memory.core.memory.embedder_models import INSTALLABLE
    from bli_memory.core.memory.embeddings import MODEL_NAME

    if model_id == MODEL_NAME:
        return model_id
    for model in INSTALLABLE.values():
        if model.model_id == model_id:
            return model.short_name
    return None


def mismatch_advice(store_model: str, configured_model: str, *, unfinished: bool = False) -> str:
    """The two ways out of a model mismatch, as one clause for an error or a status line.

    Args:
        store_model: The model id the store records.
        configured_model: The model id this process uses.
        unfinished: Some rows already hold vectors of ``configured_model``: a ``memory
            reembed`` to it stopped part way (Ctrl-C, ``kill -9``), and a rerun finishes it.

    Returns:
        ``set BLI_MEMORY_EMBEDDER=mpnet to use the store as it is, or run
        `bli-memory-mcp memory reembed` to move it to all-MiniLM-L6-v2-int8``; for a
        model with no known setting (:func:`embedder_setting`), ``set BLI_MEMORY_EMBEDDER
        to the model tiny-bag-16 (its name or model folder) to use ...``; when the
        configured model is not installed yet (:func:`install_advice`), ``... or run
        `bli-memory-mcp model install mpnet`, then `bli-memory-mcp memory reembed` ...``.
    """
    install = install_advice(configured_model)
    first = f"run `{install}`, then " if install else "run "
    if unfinished:
        return (f"run `bli-memory-mcp memory reembed` again to finish moving it to {configured_model} "
                f"(a run stopped part way), or set {_use(store_model)} to use the store as it is")
    return (f"set {_use(store_model)} to use the store as it is, "
            f"or {first}`bli-memory-mcp memory reembed` to move it to {configured_model}")


def _use(model_id: str) -> str:
    setting = embedder_setting(model_id)
    return (f"BLI_MEMORY_EMBEDDER={setting}" if setting is not None
            else f"BLI_MEMORY_EMBEDDER to the model {model_id} (its name or model folder)")


def install_advice(model_id: str) -> str | None:
    """``bli-memory-mcp model install mpnet`` when ``model_id`` is an installable model
    (:data:`~bli_memory.core.memory.embedder_models.INSTALLABLE`) whose folder is not
    in the data dir yet, else None."""
    from bli_memory.core import paths
    from bli_memory.core.memory.embedder_models import INSTALLABLE, installed_model_dir

    for model in INSTALLABLE.values():
        if model.model_id == model_id:
            try:
                installed = installed_model_dir(model.short_name, paths.data_dir()).is_dir()
            except OSError:
                installed = False
            return None if installed else f"bli-memory-mcp model install {model.short_name}"
    return None


def team_mismatch_advice(database_model: str, configured_model: str) -> str:
    """The way out of a model mismatch of the team service, as one clause.

    A team database keeps the model it was created with: its vector column has that
    model's width (``core/team/postgres/migrations``), and there is no ``reembed`` for it. So
    the service must run with the database's model; a new model means a new database,
    filled by ``import`` (records of another model are re-embedded on the way in).

    Args:
        database_model: The model id the database records.
        configured_model: The model id the service process uses.

    Returns:
        ``start the service with BLI_MEMORY_EMBEDDER=all-MiniLM-L6-v2-int8 (the model
        this database was created with), or, to move to all-mpnet-base-v2-int8, export
        every person's memories (`bli-memory-mcp memory export`) and import them ... into
        a new database served with it``.
    """
    return (f"start the service with {_use(database_model)} (the model this database was created with), "
            f"or, to move to {configured_model}, export every person's memories (`bli-memory-mcp memory "
            "export`) and import them (`bli-memory-mcp memory import`) into a new database served with it")
