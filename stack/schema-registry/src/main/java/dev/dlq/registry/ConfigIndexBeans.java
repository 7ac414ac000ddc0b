package dev.dlq.registry;

import io.apicurio.common.apps.config.DynamicConfigPropertyList;
import java.util.List;
import javax.enterprise.context.ApplicationScoped;
import javax.enterprise.inject.Produces;
import javax.inject.Singleton;

/**
 * The list of dynamic (runtime-editable) settings that Apicurio's config-index Quarkus
 * extension would generate at build time; its deployment module is not on Maven Central.
 * The registry then has no dynamic settings, which the product's tests do not use.
 */
@ApplicationScoped
public class ConfigIndexBeans {
    @Produces
    @Singleton
    DynamicConfigPropertyList noDynamicProperties() {
        return new DynamicConfigPropertyList(List.of());
    }
}
