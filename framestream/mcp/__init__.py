"""`framestream mcp`: computer-use tools over the Model Context Protocol (`server`), built on
`framestream.client` (`tools`). Only `framestream mcp` imports this package: the `mcp` SDK loads only there."""
