/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.service;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.AccessController;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.PrivilegedAction;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.Collection;

import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * The TLS trust of the plugin's calls to an https expansion service: the CA named by
 * {@code plugins.cogr.service_ca} (a PEM file in the node's config folder), else the JDK's.
 *
 * <p>Why a setting and not the JDK trust store: a service inside the search team's network
 * is usually signed by a private CA, and adding it to the JDK's {@code cacerts} would change
 * the trust of the whole node (and be lost with the next JDK). The file is read once, at
 * node start, inside {@code doPrivileged} (a plugin reads its config folder under the
 * security manager of 2.x and the agent of 3.x with the permission in
 * plugin-security.policy); an unreadable file stops the node with a message naming it.
 */
public final class ServiceTrust {

    private ServiceTrust() {
    }

    /** The context trusting the CAs in {@code caFile}, or null (the JDK default) for "". */
    public static SSLContext context(String setting, String caFile, Path configDir) {
        if (caFile == null || caFile.isBlank()) {
            return null;
        }
        Path path = configDir.resolve(caFile.trim()).normalize();
        return AccessController.doPrivileged((PrivilegedAction<SSLContext>) () -> {
            try {
                return trusting(path);
            } catch (IOException | GeneralSecurityException | RuntimeException e) {
                throw new IllegalArgumentException(
                    "[" + setting + "]: cannot read the CA certificates in [" + path + "]: " + e.getMessage(), e
                );
            }
        });
    }

    private static SSLContext trusting(Path pem) throws IOException, GeneralSecurityException {
        Collection<? extends Certificate> certificates;
        try (InputStream in = Files.newInputStream(pem)) {
            certificates = CertificateFactory.getInstance("X.509").generateCertificates(in);
        }
        if (certificates.isEmpty()) {
            throw new GeneralSecurityException("no certificate in the file");
        }
        KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
        store.load(null, null);
        int n = 0;
        for (Certificate certificate : certificates) {
            store.setCertificateEntry("cogr-service-ca-" + n++, certificate);
        }
        TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        trust.init(store);
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, trust.getTrustManagers(), null);
        return context;
    }
}
