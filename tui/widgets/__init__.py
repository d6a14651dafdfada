"""The app's widgets: prompt, picker, preview, transcript and sessions sidebar."""
