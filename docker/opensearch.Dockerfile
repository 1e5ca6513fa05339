# OpenSearch with the cogr-search plugin installed from its zip, exactly as the plugin's docs
# tell users: `bin/opensearch-plugin install --batch file:...` (--batch accepts the
# permissions of plugin-security.policy: outbound HTTP to the expansion service).
#
# BASE is an image with OpenSearch in /usr/share/opensearch, run as the user opensearch:
#   opensearchproject/opensearch:2.19.6 / :3.8.0       where a registry is in reach
#   localhost/cogr-opensearch-dist:2.19.6 / :3.8.0     built here (engine-dist.Dockerfile)
# The plugin zip must be built for the same OpenSearch version (a zip installs only on the
# exact version in its descriptor). The context holds the zip alone (`make images` stages it).
ARG BASE=opensearchproject/opensearch:2.19.6
FROM ${BASE}
COPY --chown=1000:1000 cogr-search-plugin.zip /tmp/cogr-search-plugin.zip
RUN /usr/share/opensearch/bin/opensearch-plugin install --batch file:///tmp/cogr-search-plugin.zip \
    && rm /tmp/cogr-search-plugin.zip
