"""Model providers behind one interface (:class:`kurahi.agent.providers.base.Provider`)."""
