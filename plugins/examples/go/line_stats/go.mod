module wit_component

go 1.25
