# A stock OpenSearch distribution as an image, laid out like opensearchproject/opensearch
# (/usr/share/opensearch, user opensearch uid 1000, ports 9200/9300): the local stand-in
# for the official image where no registry is in reach. Built by `make images` from a
# staged context (cogr_search/containers/images.py):
#   opensearch/   the integ-test-zip from Maven Central, unpacked; for 2.19 with the modules
#                 the official tarball ships, assembled by cogr_search.localnode.distribution
#   entrypoint.sh
# BASE is debian:<suite>-slim or its debootstrap twin; JAVA_PACKAGE the JRE the line needs
# (the integ-test-zip bundles none): Java 17 for 2.19, Java 21 (trixie) for 3.x.
ARG BASE=debian:bookworm-slim
FROM ${BASE}
ARG JAVA_PACKAGE=openjdk-17-jre-headless
RUN apt-get update -q \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends ${JAVA_PACKAGE} curl ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && ln -s "$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")" /opt/java \
    && groupadd --gid 1000 opensearch \
    && useradd --uid 1000 --gid 1000 --home-dir /usr/share/opensearch --no-create-home --shell /bin/bash opensearch
COPY --chown=1000:1000 opensearch /usr/share/opensearch
COPY --chmod=755 entrypoint.sh /usr/local/bin/opensearch-entrypoint.sh
# As in the official image: reachable through a published port, the node's own JDK.
RUN printf '\nnetwork.host: 0.0.0.0\n' >> /usr/share/opensearch/config/opensearch.yml
ENV OPENSEARCH_JAVA_HOME=/opt/java \
    PATH=/usr/share/opensearch/bin:$PATH
WORKDIR /usr/share/opensearch
USER opensearch
EXPOSE 9200 9300
ENTRYPOINT ["/usr/local/bin/opensearch-entrypoint.sh"]
