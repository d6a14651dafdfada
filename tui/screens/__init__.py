"""The screens: the chat screen and its parts, the viewer and rename dialogs, the palette's commands."""
