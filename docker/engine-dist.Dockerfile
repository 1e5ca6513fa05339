# A stock OpenSearch or Elasticsearch distribution as an image, laid out like the official
# images (/usr/share/<engine>, user <engine> uid 1000, ports 9200/9300): the local stand-in
# for opensearchproject/opensearch where no registry is in reach. Built by `make images`
# from a staged context (cogr_search/containers/images.py):
#   dist/         the integ-test-zip from Maven Central, unpacked; OpenSearch 2.19's with the
#                 modules the official tarball ships, assembled by
#                 cogr_search.localnode.distribution (the local nodes run the same files)
#   plugins/      zips installed with bin/<engine>-plugin (Elasticsearch: the root endpoint,
#                 whose rest-root module is neither in the zip nor on Maven Central)
#   entrypoint.sh
# BASE is debian:<suite>-slim or its debootstrap twin; JAVA_PACKAGE the JRE the line needs
# (the integ-test-zip bundles none): Java 17 on bookworm, Java 21 on trixie for OpenSearch 3.x.
ARG BASE=debian:bookworm-slim
FROM ${BASE}
ARG ENGINE=opensearch
ARG JAVA_PACKAGE=openjdk-17-jre-headless
RUN apt-get update -q \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends ${JAVA_PACKAGE} curl ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && ln -s "$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")" /opt/java \
    && groupadd --gid 1000 ${ENGINE} \
    && useradd --uid 1000 --gid 1000 --home-dir /usr/share/${ENGINE} --no-create-home --shell /bin/bash ${ENGINE}
ENV OPENSEARCH_JAVA_HOME=/opt/java \
    ES_JAVA_HOME=/opt/java \
    ENGINE_BIN=/usr/share/${ENGINE}/bin/${ENGINE}
COPY --chown=1000:1000 dist /usr/share/${ENGINE}
COPY plugins /tmp/plugins
COPY --chmod=755 entrypoint.sh /usr/local/bin/engine-entrypoint.sh
# As in the official images: reachable through a published port. Elasticsearch: no security
# auto-configuration (the official image's default asks for passwords; docs/containers.md).
RUN cd /usr/share/${ENGINE} \
    && printf '\nnetwork.host: 0.0.0.0\n' >> config/${ENGINE}.yml \
    && if [ "${ENGINE}" = elasticsearch ]; then printf 'xpack.security.enabled: false\n' >> config/${ENGINE}.yml; fi \
    && for zip in /tmp/plugins/*.zip; do \
         [ -e "$zip" ] || continue; bin/${ENGINE}-plugin install --batch "file://$zip" || exit 1; \
       done \
    && rm -rf /tmp/plugins && chown -R 1000:1000 /usr/share/${ENGINE}
WORKDIR /usr/share/${ENGINE}
USER ${ENGINE}
EXPOSE 9200 9300
ENTRYPOINT ["/usr/local/bin/engine-entrypoint.sh"]
