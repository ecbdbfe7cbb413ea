/**
 * The data layers of SAND: per-application key-value data for grains (global copy in Cassandra,
 * local copy in Redis on the Python side) and the execution records the frontends answer status
 * queries from. One implementation per sub-package ({@code cassandra}).
 */
package dev.sand.store;
