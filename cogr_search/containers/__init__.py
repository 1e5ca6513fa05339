"""Container images of cogr-search (podman or Docker); the tests run nodes in them through
tests/container_nodes.py.

    engine      which engine answers, and the podman/docker command line
    images      `make images`: the base, the engines with the plugin, the service; by content hash
"""
