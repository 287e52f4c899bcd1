mod conformance;
mod segregated;
mod stress;
