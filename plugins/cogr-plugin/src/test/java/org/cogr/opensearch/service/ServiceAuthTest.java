/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.service;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;

import org.cogr.opensearch.CogrSettings;
import org.junit.Test;

/** The token the processors send (from the keystore, replaced on reload) and the CA setting's errors. */
public class ServiceAuthTest {

    @Test
    public void aBlankTokenSendsNoneAndATokenIsSentAsBearer() {
        ServiceHttp http = new ServiceHttp();
        assertNull(http.authorization());
        http.token("  ");
        assertNull(http.authorization());
        http.token("s3cret\n");
        assertEquals("Bearer s3cret", http.authorization());
        http.token(null);
        assertNull(http.authorization());
    }

    @Test
    public void noCaSettingMeansTheJdkTrust() {
        assertNull(ServiceTrust.context(CogrSettings.SERVICE_CA.getKey(), "", Path.of("/nonexistent")));
    }

    @Test
    public void anUnreadableCaNamesTheSettingAndThePath() throws Exception {
        Path dir = Files.createTempDirectory("cogr-ca");
        Files.writeString(dir.resolve("empty.pem"), "not a certificate\n");
        for (String name : new String[] {"absent.pem", "empty.pem"}) {
            IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> ServiceTrust.context("plugins.cogr.service_ca", name, dir)
            );
            assertTrue(e.getMessage(), e.getMessage().startsWith("[plugins.cogr.service_ca]: cannot read the CA certificates in ["
                + dir.resolve(name) + "]"));
        }
    }
}
