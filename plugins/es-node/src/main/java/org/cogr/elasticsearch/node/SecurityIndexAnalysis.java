/*
 * cogr-search: the three analysis components the security index needs, for the local
 * Elasticsearch node.
 */
package org.cogr.elasticsearch.node;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import org.apache.lucene.analysis.CharArraySet;
import org.apache.lucene.analysis.TokenFilter;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.email.UAX29URLEmailTokenizer;
import org.apache.lucene.analysis.pattern.PatternCaptureGroupTokenFilter;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.index.analysis.TokenFilterFactory;
import org.elasticsearch.index.analysis.TokenizerFactory;
import org.elasticsearch.indices.analysis.AnalysisModule.AnalysisProvider;
import org.elasticsearch.plugins.AnalysisPlugin;

/**
 * The {@code pattern_capture} and {@code unique} token filters and the
 * {@code uax_url_email} tokenizer, with the settings of the same names in Elasticsearch's
 * {@code analysis-common} module.
 *
 * <p>Why: x-pack security keeps native users, roles and API keys in the {@code .security}
 * index, whose {@code email} analyzer is built from these three. They come from the
 * {@code analysis-common} module, which the integ-test-zip distribution lacks and Maven
 * Central does not publish, so without them the index cannot be created: no
 * {@code PUT _security/role}, no {@code PUT _security/user}, no API keys on the local node.
 * The Lucene classes behind them ship in the server's own {@code lib/}. Only these three
 * are added: the local node's own indices use the server's built-in analysis.
 */
final class SecurityIndexAnalysis {

    private SecurityIndexAnalysis() {
    }

    static Map<String, AnalysisProvider<TokenFilterFactory>> tokenFilters() {
        return Map.of(
            // settings of its own or nothing: never instantiated with none (as analysis-common does)
            "pattern_capture", AnalysisPlugin.requiresAnalysisSettings(
                (indexSettings, environment, name, settings) -> patternCapture(name, settings)),
            "unique", (indexSettings, environment, name, settings) -> unique(name, settings)
        );
    }

    static Map<String, AnalysisProvider<TokenizerFactory>> tokenizers() {
        return Map.of("uax_url_email", (indexSettings, environment, name, settings) -> {
            int maxTokenLength = settings.getAsInt("max_token_length", 255);
            return TokenizerFactory.newFactory(name, () -> {
                UAX29URLEmailTokenizer tokenizer = new UAX29URLEmailTokenizer();
                tokenizer.setMaxTokenLength(maxTokenLength);
                return tokenizer;
            });
        });
    }

    private static TokenFilterFactory patternCapture(String name, Settings settings) {
        List<String> regexes = settings.getAsList("patterns");
        if (regexes.isEmpty()) {
            throw new IllegalArgumentException("filter [" + name + "]: [patterns] is required");
        }
        Pattern[] patterns = regexes.stream().map(Pattern::compile).toArray(Pattern[]::new);
        boolean preserveOriginal = settings.getAsBoolean("preserve_original", true);
        return factory(name, input -> new PatternCaptureGroupTokenFilter(input, preserveOriginal, patterns));
    }

    private static TokenFilterFactory unique(String name, Settings settings) {
        boolean onlyOnSamePosition = settings.getAsBoolean("only_on_same_position", false);
        return factory(name, input -> new UniqueTokenFilter(input, onlyOnSamePosition));
    }

    private static TokenFilterFactory factory(String name, java.util.function.UnaryOperator<TokenStream> create) {
        return new TokenFilterFactory() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public TokenStream create(TokenStream tokenStream) {
                return create.apply(tokenStream);
            }
        };
    }

    /**
     * Drops a token whose term was already seen: in the whole stream, or, with
     * {@code only_on_same_position}, at the same position only (synonyms stacked there).
     */
    static final class UniqueTokenFilter extends TokenFilter {

        private final CharTermAttribute term = addAttribute(CharTermAttribute.class);
        private final org.apache.lucene.analysis.tokenattributes.PositionIncrementAttribute increment =
            addAttribute(org.apache.lucene.analysis.tokenattributes.PositionIncrementAttribute.class);
        private final CharArraySet seen = new CharArraySet(8, false);
        private final boolean onlyOnSamePosition;

        UniqueTokenFilter(TokenStream input, boolean onlyOnSamePosition) {
            super(input);
            this.onlyOnSamePosition = onlyOnSamePosition;
        }

        @Override
        public boolean incrementToken() throws IOException {
            while (input.incrementToken()) {
                if (onlyOnSamePosition && increment.getPositionIncrement() > 0) {
                    seen.clear();
                }
                char[] buffer = term.buffer();
                int length = term.length();
                if (!seen.contains(buffer, 0, length)) {
                    char[] copy = new char[length];
                    System.arraycopy(buffer, 0, copy, 0, length);
                    seen.add(copy);
                    return true;
                }
            }
            return false;
        }

        @Override
        public void reset() throws IOException {
            super.reset();
            seen.clear();
        }
    }
}
