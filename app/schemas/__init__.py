"""Requests and answers of the REST API, one module per router (api, toy, analysis, lab, iris, service),
with what they share in `common`."""
