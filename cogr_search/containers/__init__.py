"""Container images of cogr-search and the nodes the tests run in them (podman or Docker).

    engine      which engine answers, and the podman/docker command line
    images      `make images`: the base, the engines with the plugin, the service; by content hash
    testnodes   the tests' session nodes as containers (COGR_TEST_NODES=containers), and clean-up
"""
