# OpenSearch 2.19 with the cogr-search plugin installed (ingest processor cogr_keywords,
# search processors cogr_expand and cogr_expand_status). For 3.x: a 3.x image tag, a Java 21
# Maven image and -Dopensearch.line=3 (the zip is then under target-os3/); not built here.
#
# Build from the repository root:   docker build -f docker/opensearch.Dockerfile -t cogr-opensearch .
#
# The plugin is compiled against the same OpenSearch version as the image
# (OPENSEARCH_VERSION): a plugin zip installs only on the exact version in its descriptor.
ARG OPENSEARCH_VERSION=2.19.2

FROM maven:3.9-eclipse-temurin-17 AS plugin
ARG OPENSEARCH_VERSION
WORKDIR /src
COPY plugins ./plugins
# The Maven test of the Java normalizer runs the vectors shared with the Python tests.
COPY tests/vectors ./tests/vectors
RUN mvn -B -q -f plugins/pom.xml -pl cogr-plugin -am -Dopensearch.version=${OPENSEARCH_VERSION} package \
    && cp plugins/cogr-plugin/target/cogr-search-plugin-*-opensearch-${OPENSEARCH_VERSION}.zip /tmp/cogr-search-plugin.zip

FROM opensearchproject/opensearch:${OPENSEARCH_VERSION}
COPY --from=plugin /tmp/cogr-search-plugin.zip /tmp/cogr-search-plugin.zip
# --batch accepts the permissions of plugin-security.policy (outbound HTTP to the service).
RUN /usr/share/opensearch/bin/opensearch-plugin install --batch file:///tmp/cogr-search-plugin.zip \
    && rm /tmp/cogr-search-plugin.zip
