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

__all__ = ["embedder_setting", "mismatch_advice"]


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


def mismatch_advice(store_model: str, configured_model: str) -> str:
    """The two ways out of a model mismatch, as one clause for an error or a status line.

    Args:
        store_model: The model id the store records.
        configured_model: The model id this process uses.

    Returns:
        ``set BLI_MEMORY_EMBEDDER=mpnet to use the store as it is, or run
        `bli-memory-mcp memory reembed` to move it to all-MiniLM-L6-v2-int8``; for a
        model with no known setting (:func:`embedder_setting`), ``set BLI_MEMORY_EMBEDDER
        to the model tiny-bag-16 (its name or model folder) to use ...``.
    """
    setting = embedder_setting(store_model)
    use = (f"BLI_MEMORY_EMBEDDER={setting}" if setting is not None
           else f"BLI_MEMORY_EMBEDDER to the model {store_model} (its name or model folder)")
    return (f"set {use} to use the store as it is, "
            f"or run `bli-memory-mcp memory reembed` to move it to {configured_model}")
