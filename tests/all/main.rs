mod codegen;
mod conformance;
