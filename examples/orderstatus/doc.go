// Command orderstatus is the order status processor example.
package main

func main() {}
