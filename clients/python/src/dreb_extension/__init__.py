"""Write dreb extensions in Python: the extension side of the extension protocol (protocol/extension.yaml).

    from dreb_extension import Extension

    ext = Extension(name="guard")

    @ext.on("tool_call")
    def guard(event, ctx):
        if event["toolName"] == "bash" and "rm -rf" in event["input"].get("command", ""):
            return {"block": True, "reason": "Dangerous command"}

    if __name__ == "__main__":
        ext.run()

See docs/extensions.md.
"""

from ._runtime import (
    PROTOCOL_VERSION,
    CommandContext,
    Context,
    Extension,
    ExtensionError,
    ToolCall,
    Ui,
)

__all__ = [
    "PROTOCOL_VERSION",
    "CommandContext",
    "Context",
    "Extension",
    "ExtensionError",
    "ToolCall",
    "Ui",
]
