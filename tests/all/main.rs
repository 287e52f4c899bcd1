mod conformance;
mod unity;
