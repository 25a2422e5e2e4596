"""Where a URL and its storage options become a store (`url.py::from_url`), and where
a misspelled option name finds the one meant (`option_names.py`)."""
